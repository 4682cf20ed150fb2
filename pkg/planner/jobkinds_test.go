package planner

import (
	"context"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/pvectl/pvectl/pkg/planner/importdoc"
	"github.com/pvectl/pvectl/pkg/pve"
)

const jobsSpec = `kind: Storage
name: tank
spec: {type: zfspool, pool: rpool/data, content: [images, rootdir]}
---
kind: QemuVM
name: app
spec:
  vmid: 120
  memory: 512
  scsi0: tank:1
---
kind: HAResource
name: app
dependsOn: [QemuVM/app]
spec:
  guest: QemuVM/app
  state: started
  max_restart: 2
---
kind: HARule
name: app-prefers-pve
spec:
  type: node-affinity
  guests: [QemuVM/app]
  nodes: pve:2,pve2:1
---
kind: BackupJob
name: nightly
dependsOn: [QemuVM/app]
spec:
  schedule: "mon..fri 21:00"
  guests: [QemuVM/app]
  storage: local
  mode: snapshot
  prune-backups: {keep-last: 3}
---
kind: ReplicationJob
name: app-to-pve2
dependsOn: [QemuVM/app]
spec:
  guest: QemuVM/app
  target: pve2
  schedule: "*/15"
`

func sectionRow(t *testing.T, cl *pve.Client, path, key, id string) *pve.Config {
	t.Helper()
	rows, err := engine.ReadSection(context.Background(), cl, path)
	if err != nil {
		t.Fatal(err)
	}
	return rowWith(rows, key, id)
}

// TestSimJobKindsLifecycle: one apply makes the HA resource, its rule, a
// backup job and a replication job of a VM made in the same apply, each
// carrying the VM's vmid; the next plan is clean; a schedule changed by
// hand is planned and restored; destroy removes them before the VM.
func TestSimJobKindsLifecycle(t *testing.T) {
	sim := newSim(t, "pve", "pve2")
	set := loadSpec(t, jobsSpec)
	p := planFor(t, sim, set, engine.Options{})
	want := []string{
		"create Storage/tank",
		"create QemuVM/app <- Storage/tank",
		"create BackupJob/nightly <- QemuVM/app",
		"create HAResource/app <- QemuVM/app",
		"create HARule/app-prefers-pve <- HAResource/app,QemuVM/app",
		"create ReplicationJob/app-to-pve2 <- QemuVM/app",
	}
	wantPlan(t, "plan", p, want)
	applyPlan(t, sim, p)
	cl := sim.cl
	if r := sectionRow(t, cl, "/cluster/ha/resources", "sid", "vm:120"); r == nil || r.Get("max_restart") != "2" {
		t.Errorf("HA resource: got %v", r)
	}
	if r := sectionRow(t, cl, "/cluster/ha/rules", "rule", "app-prefers-pve"); r == nil || r.Get("resources") != "vm:120" || r.Get("nodes") != "pve:2,pve2:1" {
		t.Errorf("HA rule: got %v", r)
	}
	if r := sectionRow(t, cl, "/cluster/backup", "id", "nightly"); r == nil || r.Get("vmid") != "120" || r.Get("schedule") != "mon..fri 21:00" {
		t.Errorf("backup job: got %v", r)
	}
	if r := sectionRow(t, cl, "/cluster/replication", "id", "120-0"); r == nil || r.Get("target") != "pve2" || r.Get("schedule") != "*/15" {
		t.Errorf("replication job: got %v", r)
	}
	if got := summary(planFor(t, sim, set, engine.Options{})); !allNoop(got) {
		t.Errorf("second plan: got %v, want no changes", got)
	}

	// A hand edit of the schedule is drift: planned, and restored.
	if err := cl.Do(context.Background(), http.MethodPut, "/cluster/backup/nightly", map[string][]string{"schedule": {"sat 03:00"}}, nil); err != nil {
		t.Fatal(err)
	}
	p = planFor(t, sim, set, engine.Options{})
	if c := p.Change("BackupJob/nightly"); c == nil || c.Action != engine.Update || !strings.Contains(strings.Join(c.Reasons, ","), "schedule changed") {
		t.Fatalf("after a hand edit: got %v", summary(p))
	}
	applyPlan(t, sim, p)
	if r := sectionRow(t, cl, "/cluster/backup", "id", "nightly"); r.Get("schedule") != "mon..fri 21:00" {
		t.Errorf("schedule after apply: got %q", r.Get("schedule"))
	}

	p = planFor(t, sim, set, engine.Options{Destroy: true})
	applyPlan(t, sim, p)
	for _, path := range []string{"/cluster/ha/resources", "/cluster/ha/rules", "/cluster/backup"} {
		if rows, _ := engine.ReadSection(context.Background(), cl, path); len(rows) != 0 {
			t.Errorf("after destroy %s: got %v", path, rows)
		}
	}
}

func allNoop(summary []string) bool {
	for _, s := range summary {
		if !strings.HasPrefix(s, "noop ") {
			return false
		}
	}
	return true
}

// The plan says that the HA manager moves the guest's power.
func TestHAPowerNote(t *testing.T) {
	tests := []struct {
		name string
		p    map[string]string
		live *pve.Config
		want string
	}{
		{"create, default state", map[string]string{}, nil, "the HA manager starts the guest"},
		{"stop", map[string]string{"state": "stopped"}, pve.ConfigOf(map[string]string{"state": "started"}), "the HA manager stops the guest"},
		{"enabled is started", map[string]string{"state": "enabled"}, pve.NewConfig(0), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := strings.Join(haPowerNote(tt.p, tt.live), ";")
			if tt.want == "" && got != "" || !strings.Contains(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// TestSimImportJobKinds: import --all writes the HA resource and rule, the
// backup job and the replication job with PVE's raw ids, and the written
// documents plan clean.
func TestSimImportJobKinds(t *testing.T) {
	sim := newSim(t, "pve", "pve2")
	applyPlan(t, sim, planFor(t, sim, loadSpec(t, jobsSpec), engine.Options{}))
	res, docs := importClean(t, sim, engine.ImportOptions{All: true})
	for addr, key := range map[string]string{"HAResource/vm-120": "sid", "HARule/app-prefers-pve": "resources",
		"BackupJob/nightly": "vmid", "ReplicationJob/120-0": "target"} {
		d := docs[addr]
		if d == nil {
			t.Errorf("%s not imported (got %v)", addr, slices.Sorted(maps.Keys(docs)))
			continue
		}
		if _, ok := importdoc.Value(d.Spec, key); !ok {
			t.Errorf("%s: no %s in %v", addr, key, d.Spec)
		}
	}
	planImported(t, sim, res)
}

// TestSimUpdateSendsWhatAKeyRequires: PVE refuses a parameter sent
// without the one its schema says it requires (pve-common JSONSchema.pm
// check_object: a backup job's notes-template needs storage). An update
// that changes only the notes sends the storage beside them.
func TestSimUpdateSendsWhatAKeyRequires(t *testing.T) {
	sim := newSim(t)
	job := "kind: BackupJob\nname: notes\nspec:\n  schedule: \"21:00\"\n  all: true\n  storage: local\n  notes-template: \"{{guestname}}\"\n"
	applyPlan(t, sim, planFor(t, sim, loadSpec(t, job), engine.Options{}))
	set := loadSpec(t, strings.Replace(job, "{{guestname}}", "{{guestname}} nightly", 1))
	p := planFor(t, sim, set, engine.Options{})
	c := p.Change("BackupJob/notes")
	if c == nil || c.Action != engine.Update {
		t.Fatalf("plan: got %v", summary(p))
	}
	if c.Params["storage"] != "local" {
		t.Errorf("update params %v: want storage sent beside notes-template", c.Params)
	}
	applyPlan(t, sim, p)
	if r := sectionRow(t, sim.cl, "/cluster/backup", "id", "notes"); r.Get("notes-template") != "{{guestname}} nightly" {
		t.Errorf("notes-template after apply: got %q", r.Get("notes-template"))
	}
}
