package planner

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/pvectl/pvectl/pkg/planner/importdoc"
	"github.com/pvectl/pvectl/pkg/pve/pvesim"
	"github.com/pvectl/pvectl/pkg/pve/pvesim/simtest"
	"github.com/pvectl/pvectl/pkg/spec"
)

// simState starts the simulator on a state file that edit changed: a
// cluster as no API call could make it (a drive PVE would not write), or
// many guests at once without a create each.
func simState(t *testing.T, edit func(st map[string]any)) (*simClients, *simtest.Sim) {
	t.Helper()
	opts := pvesim.Options{TokenID: simToken, TokenSecret: simSecret, TaskDuration: time.Millisecond, Seed: 1}
	opts.StateFile = simtest.EditedState(t, opts, edit)
	s := simtest.Start(t, simtest.Options{Sim: opts})
	return &simClients{cl: s.Client, conn: &spec.Connection{URL: s.URL, Nodes: []string{"pve"}}}, s
}

// putVM adds a VM (and its volumes) to a state file's map.
func putVM(st map[string]any, vmid string, conf map[string]any, vols ...map[string]any) {
	vms := st["vms"].(map[string]any)
	vms[vmid] = map[string]any{"vmid": json.Number(vmid), "node": "pve", "conf": conf}
	for _, v := range vols {
		st["volumes"].(map[string]any)[v["storage"].(string)+":"+v["name"].(string)] = v
	}
}

// planImported plans the documents an import wrote with a fresh read of
// everything, as `pvectl plan` of its output would, and fails the test
// on any change: the import's own check, which reuses what it read, must
// agree.
func planImported(t *testing.T, cl engine.Clients, res *engine.ImportResult) {
	t.Helper()
	var buf bytes.Buffer
	if err := res.Encode(&buf); err != nil {
		t.Fatal(err)
	}
	vals := map[string]string{}
	for _, d := range res.Docs {
		d.CopySecrets(vals)
	}
	set, err := spec.Load([]string{spec.StdinPath}, spec.LoadOptions{Stdin: &buf,
		Getenv: func(name string) (string, bool) { v, ok := vals[name]; return v, ok }})
	if err != nil {
		t.Fatalf("the import's output does not load: %v", err)
	}
	if len(set.Resources) != len(res.Docs) {
		t.Errorf("the output loads as %d resources, want the %d documents (the rejected ones commented out)", len(set.Resources), len(res.Docs))
	}
	p := livePlan(t, cl, set, engine.Options{})
	for _, c := range p.Changes {
		if c.Action != engine.NoOp {
			t.Errorf("%s: %s %v %v", c.Address, c.Action, c.Reasons, c.Diff)
		}
	}
}

// importClean imports what opts name, failing the test on an error or a
// problem; it returns the documents by address too.
func importClean(t *testing.T, cl engine.Clients, opts engine.ImportOptions) (*engine.ImportResult, map[string]*engine.ImportedDoc) {
	t.Helper()
	res, err := engine.Import(context.Background(), cl, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Problems) > 0 {
		t.Errorf("problems: %v", res.Problems)
	}
	docs := map[string]*engine.ImportedDoc{}
	for _, d := range res.Docs {
		docs[d.Address()] = d
	}
	return res, docs
}

func addresses(docs []*engine.ImportedDoc) []string {
	var out []string
	for _, d := range docs {
		out = append(out, d.Address())
	}
	return out
}

// TestSimImportOddGuest is issue 18's acceptance: one guest has a drive
// PVE would not write through its API (no size=); import --all writes
// every other document, and they plan clean; the odd one is commented
// out and named with why.
func TestSimImportOddGuest(t *testing.T) {
	cl, _ := simState(t, func(st map[string]any) {
		putVM(st, "777", map[string]any{"name": "odd", "memory": "1024", "scsi0": "local-lvm:vm-777-disk-0"},
			map[string]any{"storage": "local-lvm", "name": "vm-777-disk-0", "content": "images", "format": "raw", "size": 1 << 30, "vmid": 777})
		putVM(st, "778", map[string]any{"name": "fine", "memory": "1024", "scsi0": "local-lvm:vm-778-disk-0,size=1G"},
			map[string]any{"storage": "local-lvm", "name": "vm-778-disk-0", "content": "images", "format": "raw", "size": 1 << 30, "vmid": 778})
	})
	res, err := engine.Import(context.Background(), cl, engine.ImportOptions{All: true})
	if err != nil {
		t.Fatalf("import --all: %v", err)
	}
	got := addresses(res.Docs)
	for _, want := range []string{"QemuVM/fine", "QemuVM/ubuntu-24.04-cloud", "LinuxBridge/vmbr0", "Storage/local", "Storage/local-lvm", "NodeDns/pve"} {
		if !slices.Contains(got, want) {
			t.Errorf("documents lack %s: %v", want, got)
		}
	}
	if slices.Contains(got, "QemuVM/odd") {
		t.Errorf("the odd guest was written as a document: %v", got)
	}
	if r := addresses(res.Rejected); !slices.Equal(r, []string{"QemuVM/odd"}) {
		t.Errorf("rejected: got %v, want [QemuVM/odd]", r)
	}
	if len(res.Problems) != 1 || !strings.HasPrefix(res.Problems[0], "QemuVM/odd: commented out: it would not plan clean: plan would update") ||
		!strings.Contains(res.Problems[0], "scsi0") {
		t.Errorf("problems: got %q, want one line naming QemuVM/odd and scsi0", res.Problems)
	}
	var buf bytes.Buffer
	if err := res.Encode(&buf); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "# pvectl import: QemuVM/odd is commented out") || !strings.Contains(buf.String(), "# kind: QemuVM\n# name: odd\n") {
		t.Errorf("the odd guest is not written commented out:\n%s", buf.String())
	}
	planImported(t, cl, res)
}

// TestSimImportInfrastructure: on a fresh simulator the management
// bridge (it has the node's address), the installer's storages and the
// seeded template (pvectl did not bake it) are imported managed: false,
// and no NetworkApply commits a network nothing manages; a destroy of the
// documents removes none of them. --manage-infrastructure imports them
// as ordinary documents.
func TestSimImportInfrastructure(t *testing.T) {
	sim := newSim(t)
	infra := []string{"LinuxBridge/vmbr0", "QemuVM/ubuntu-24.04-cloud", "Storage/local", "Storage/local-lvm"}
	for _, manage := range []bool{false, true} {
		res, docs := importClean(t, sim, engine.ImportOptions{All: true, ManageInfrastructure: manage})
		for _, addr := range infra {
			if d := docs[addr]; d == nil || d.ReadOnly == manage {
				t.Errorf("manage %v: %s: got %+v, want managed: %v", manage, addr, d, manage)
			}
		}
		if _, ok := docs["NetworkApply/pve"]; ok != manage {
			t.Errorf("manage %v: NetworkApply/pve written: %v", manage, ok)
		}
		planImported(t, sim, res)
		set, _, err := engine.LoadDocs(res.Docs, nil)
		if err != nil {
			t.Fatal(err)
		}
		p := livePlan(t, sim, set, engine.Options{Destroy: true})
		var deletes []string
		for _, c := range p.Changes {
			if c.Action == engine.Delete {
				deletes = append(deletes, c.Address)
			}
		}
		slices.Sort(deletes)
		if want := []string(nil); manage {
			want = infra
			if !slices.Equal(deletes, want) {
				t.Errorf("--manage-infrastructure: destroy deletes %v, want %v", deletes, want)
			}
		} else if len(deletes) > 0 {
			t.Errorf("destroy of the imported documents deletes %v, want nothing", deletes)
		}
	}
}

// TestSimImportGuestState: a stopped VM is imported without running
// (a plan of it leaves it stopped, and one started later stays started);
// --with-power-state writes it. A MAC the user chose and one PVE
// generated are both kept.
func TestSimImportGuestState(t *testing.T) {
	cl, _ := simState(t, func(st map[string]any) {
		putVM(st, "300", map[string]any{"name": "maint", "memory": "1024",
			"net0": "virtio=02:11:22:33:44:55,bridge=vmbr0", "net1": "e1000=BC:24:11:AA:BB:CC,bridge=vmbr0"})
	})
	ctx := context.Background()
	res, err := engine.Import(ctx, cl, engine.ImportOptions{Refs: []string{"QemuVM/300"}})
	if err != nil {
		t.Fatal(err)
	}
	d := res.Docs[0]
	if _, ok := importdoc.Value(d.Spec, "running"); ok {
		t.Errorf("running written without --with-power-state: %v", d.Spec)
	}
	for key, want := range map[string]string{"net0": "virtio=02:11:22:33:44:55,bridge=vmbr0", "net1": "e1000=BC:24:11:AA:BB:CC,bridge=vmbr0"} {
		if got, _ := importdoc.Value(d.Spec, key); got != want {
			t.Errorf("%s: got %v want %s", key, got, want)
		}
	}
	planImported(t, cl, res)
	res, err = engine.Import(ctx, cl, engine.ImportOptions{Refs: []string{"QemuVM/300"}, WithPowerState: true})
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := importdoc.Value(res.Docs[0].Spec, "running"); !ok || got != false {
		t.Errorf("--with-power-state: running is %v (present %v), want false", got, ok)
	}
	planImported(t, cl, res)
}

// TestImportCallsPerGuest is issue 22's bound: import --all of 500 VMs
// reads each config once and every list once — at most 1.05 calls per
// VM — and its check re-reads nothing.
func TestImportCallsPerGuest(t *testing.T) {
	const n = 500
	cl, s := simState(t, func(st map[string]any) {
		for i := range n {
			id := strconv.Itoa(1000 + i)
			vol := "vm-" + id + "-disk-0"
			putVM(st, id, map[string]any{"name": "vm" + id, "memory": "1024", "cores": "2",
				"net0": fmt.Sprintf("virtio=BC:24:11:00:%02X:%02X,bridge=vmbr0", i/256, i%256), "scsi0": "local-lvm:" + vol + ",size=8G"},
				map[string]any{"storage": "local-lvm", "name": vol, "content": "images", "format": "raw", "size": 8 << 30, "vmid": json.Number(id)})
		}
	})
	s.Requests.Reset()
	res, err := engine.Import(context.Background(), cl, engine.ImportOptions{All: true})
	if err != nil {
		t.Fatal(err)
	}
	calls := s.Requests.Reset()
	total := 0
	var repeated []string
	for k, c := range calls {
		total += c
		if c > 1 {
			repeated = append(repeated, fmt.Sprintf("%s ×%d", k, c))
		}
	}
	if len(res.Docs) < n || len(res.Problems) > 0 {
		t.Fatalf("imported %d documents, problems %v", len(res.Docs), res.Problems)
	}
	t.Logf("import --all of %d VMs: %d calls (%.3f per VM)", n, total, float64(total)/n)
	// Per VM at most 1.05 calls, plus the one list read of each
	// cluster-wide kind (roles, groups, realms, HA, jobs, options …),
	// whatever the number of VMs.
	if limit := n*105/100 + 8; total > limit {
		t.Errorf("import --all of %d VMs made %d calls, want ≤ %d", n, total, limit)
	}
	if len(repeated) > 0 {
		t.Errorf("calls made more than once: %v", repeated)
	}
}

// TestSimImportReadFailure: a guest whose config cannot be read (PVE
// answers 500 for it alone) is named with why; every other object is
// imported, and the import as a whole does not fail.
func TestSimImportReadFailure(t *testing.T) {
	s := simtest.Start(t, simtest.Options{Sim: pvesim.Options{TokenID: simToken, TokenSecret: simSecret, TaskDuration: time.Millisecond, Seed: 1},
		Wrap: func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/nodes/pve/qemu/9000/config") {
					http.Error(w, "", http.StatusInternalServerError)
					return
				}
				next.ServeHTTP(w, r)
			})
		}})
	cl := &simClients{cl: s.Client, conn: &spec.Connection{URL: s.URL, Nodes: []string{"pve"}}}
	res, err := engine.Import(context.Background(), cl, engine.ImportOptions{All: true})
	if err != nil {
		t.Fatalf("import --all: %v", err)
	}
	if len(res.Problems) != 1 || !strings.HasPrefix(res.Problems[0], "QemuVM/ubuntu-24.04-cloud: read config of vm 9000: ") {
		t.Errorf("problems: %q", res.Problems)
	}
	if got := addresses(res.Docs); len(got) < 5 || slices.Contains(got, "QemuVM/ubuntu-24.04-cloud") {
		t.Errorf("documents: %v", got)
	}
}
