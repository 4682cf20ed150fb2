package planner

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/spec"
)

const permSpec = `kind: Pool
name: team
---
kind: QemuVM
name: web
spec:
  memory: 1024
  scsi0: local-lvm:4
  net0: virtio,bridge=vmbr0,tag=20
  pool: team
  running: true
`

// asToken creates user and a privilege-separated token through the API and
// returns clients that talk as that token.
func asToken(t *testing.T, admin *simClients, user, name string) (*simClients, string) {
	t.Helper()
	ctx := context.Background()
	if err := admin.cl.Do(ctx, http.MethodPost, "/access/users", url.Values{"userid": {user}}, nil); err != nil {
		t.Fatal(err)
	}
	var tok struct {
		Full  string `json:"full-tokenid"`
		Value string `json:"value"`
	}
	if err := admin.cl.Do(ctx, http.MethodPost, "/access/users/"+user+"/token/"+name, nil, &tok); err != nil {
		t.Fatal(err)
	}
	cl, err := pve.NewClient(admin.conn.URL, pve.WithToken(tok.Full, tok.Value))
	if err != nil {
		t.Fatal(err)
	}
	return &simClients{cl: cl, conn: admin.conn}, tok.Full
}

func grantBoth(t *testing.T, admin *simClients, user, token, path, role string) {
	t.Helper()
	for _, who := range []url.Values{{"users": {user}}, {"tokens": {token}}} {
		who.Set("path", path)
		who.Set("roles", role)
		if err := admin.cl.Do(context.Background(), http.MethodPut, "/access/acl", who, nil); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSimPermissionPreflight: a privilege-separated token without ACLs
// gets a refused plan naming what it lacks, never a plan made from the
// empty view PVE gives it; with the rights its calls need it plans and
// applies, and plans clean afterwards.
func TestSimPermissionPreflight(t *testing.T) {
	admin := newSim(t)
	tok, id := asToken(t, admin, "ci@pve", "plan")
	set := loadSpec(t, permSpec)

	plan := func() error {
		_, err := tryPlan(t, tok, set, engine.Options{})
		return err
	}
	err := plan()
	if err == nil {
		t.Fatal("plan with a token without ACLs: got no error")
	}
	for _, want := range []string{
		"QemuVM/web: the API token ci@pve!plan lacks VM.Audit on /vms, needed to find the VM by name",
		"Pool/team: the API token ci@pve!plan lacks Pool.Audit on /pool/team",
		"pveum acl modify /vms --roles PVEAuditor --tokens 'ci@pve!plan'", "--users ci@pve",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("got %v\nwant it to say %q", err, want)
		}
	}

	// Reading is not enough: the create's calls are checked too.
	grantBoth(t, admin, "ci@pve", id, "/vms", "PVEVMAdmin")
	grantBoth(t, admin, "ci@pve", id, "/pool/team", "PVEPoolAdmin")
	err = plan()
	wantSays(t, err,
		"QemuVM/web: the API token ci@pve!plan lacks Datastore.AllocateSpace on /storage/local-lvm, needed to set scsi0",
		"QemuVM/web: the API token ci@pve!plan lacks SDN.Use on /sdn/zones/localnetwork/vmbr0/20, needed to set net0 (its bridge vmbr0)",
		"the role PVEDatastoreUser", "the role PVESDNUser",
	)

	grantBoth(t, admin, "ci@pve", id, "/storage", "PVEDatastoreUser")
	grantBoth(t, admin, "ci@pve", id, "/sdn/zones/localnetwork", "PVESDNUser")
	p := planFor(t, tok, set, engine.Options{})
	if s := p.Summary(); s.Create != 2 {
		t.Fatalf("got %+v, want both created", s)
	}
	applyPlan(t, tok, p)
	if s := planFor(t, tok, set, engine.Options{}).Summary(); s.Create+s.Update+s.Delete+s.Replace != 0 {
		t.Errorf("got %+v after apply, want a clean plan", s)
	}
}

// TestSimRootOnlySetting: a setting only root@pam may make is refused at
// plan time for every token, the admin's too.
func TestSimRootOnlySetting(t *testing.T) {
	admin := newSim(t)
	tests := []struct{ name, spec, want string }{
		{"args", "args: -no-reboot", "QemuVM/odd: only root@pam may set args, and no API token (root@pam!pvectl neither) is root@pam, so PVE will refuse it: drop it"},
		// A raw PCI address: the plan says to use a resource mapping.
		{"hostpci host", "hostpci0: host=0000:01:00.0,pcie=1", "QemuVM/odd: only root@pam may pass a host device through by its address (hostpci0: host=0000:01:00.0), " +
			"and no API token (root@pam!pvectl neither) is root@pam, so PVE will refuse it: use a resource mapping instead — create one for the device " +
			"(Datacenter → Resource Mappings, or POST /cluster/mapping/pci), write hostpci0: mapping=NAME,pcie=1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			set := loadSpec(t, "kind: QemuVM\nname: odd\nspec:\n  "+tc.spec+"\n")
			_, err := tryPlan(t, admin, set, engine.Options{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want %q", err, tc.want)
			}
		})
	}
}

func TestPermNeedsOfAGuestUpdate(t *testing.T) {
	c := &engine.Change{Action: engine.Update, State: &guestState{VMID: 100},
		Params: map[string]string{"memory": "2048", "ide2": "none,media=cdrom", "ipconfig0": "ip=dhcp", "delete": "net1"},
		Diff:   []engine.FieldDiff{{Path: "scsi0.size", Before: "4G", After: "8G"}, {Path: "pool", Before: "a", After: "b"}, {Path: "running", Before: false, After: true}}}
	lo := &engine.LiveObj{Exists: true, Config: pve.ConfigOf(map[string]string{"ide2": "local:iso/x.iso,media=cdrom", "net1": "virtio,bridge=vmbr1"})}
	var got []string
	for _, n := range engine.CallNeeds(qemu.ChangeCalls(c, lo)) {
		got = append(got, n.Path+" "+strings.Join(n.Privs, map[bool]string{true: "|", false: "+"}[n.AnyOf]))
	}
	want := []string{
		// The config write's rule (any VM.Config.* privilege) is implied by
		// its handler's checks of each setting.
		"/vms/100 VM.Config.CDROM", // the old and the new drive: one need
		"/vms/100 VM.Config.Cloudinit|VM.Config.Network", "/vms/100 VM.Config.Memory",
		"/vms/100 VM.Config.Network", "/sdn/zones/localnetwork/vmbr1 SDN.Use", // deleting net1
		"/vms/100 VM.Config.Disk", // the resize
		"/pool/a Pool.Allocate", "/vms/100 Permissions.Modify|VM.Allocate", "/pool/b Pool.Allocate",
		"/vms/100 VM.PowerMgmt",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// Moves, a migration and a reboot for pending changes need their
// calls' privileges; a running container's move also powers it.
func TestPermNeedsOfPlacement(t *testing.T) {
	tests := []struct {
		name string
		qemu bool
		st   guestState
		diff []engine.FieldDiff
		live string
		want []string
	}{
		{name: "vm disk move", qemu: true, st: guestState{VMID: 100},
			diff: []engine.FieldDiff{{Path: "scsi0.storage", Before: "local-lvm", After: "fast"}},
			want: []string{"/vms/100 VM.Config.Disk", "/storage/fast Datastore.AllocateSpace"}},
		{name: "running container volume move", st: guestState{VMID: 200}, live: "running",
			diff: []engine.FieldDiff{{Path: "rootfs.storage", Before: "local-lvm", After: "fast"}},
			want: []string{"/vms/200 VM.Config.Disk", "/storage/fast Datastore.AllocateSpace", "/vms/200 VM.PowerMgmt"}},
		{name: "migration", qemu: true, st: guestState{VMID: 100, PrevNode: "pve"},
			diff: []engine.FieldDiff{{Path: "node", Before: "pve", After: "pve2"}}, want: []string{"/vms/100 VM.Migrate"}},
		{name: "reboot", qemu: true, st: guestState{VMID: 100, Reboot: true}, want: []string{"/vms/100 VM.PowerMgmt"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := tc.st
			c := &engine.Change{Action: engine.Update, Node: "pve2", State: &st, Diff: tc.diff, Resource: &spec.Resource{Name: "x"}}
			if tc.st.PrevNode == "" {
				c.Node = "pve"
			}
			lo := &engine.LiveObj{Exists: true, State: &guestLive{VMID: tc.st.VMID, Status: tc.live}}
			var needs []engine.PermNeed
			if tc.qemu {
				needs = engine.CallNeeds(qemu.ChangeCalls(c, lo))
			} else {
				needs = engine.CallNeeds(lxc.ChangeCalls(c, lo))
			}
			var got []string
			for _, n := range needs {
				got = append(got, n.Path+" "+strings.Join(n.Privs, "+"))
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

func TestPermNeedsOfAGuestRead(t *testing.T) {
	tests := []struct {
		name string
		r    *spec.Resource
		want string
	}{
		{"by name", &spec.Resource{Name: "web"}, "/vms VM.Audit"},
		{"pinned vmid", &spec.Resource{Name: "web", Params: spec.ParamsOf(map[string]string{"vmid": "150"})}, "/vms/150 VM.Audit"},
		{"in a pool", &spec.Resource{Name: "web", Params: spec.ParamsOf(map[string]string{"pool": "dev"})}, "/vms VM.Audit\n/pool/dev Pool.Audit"},
		{"out of any pool", &spec.Resource{Name: "web", Remove: []string{"pool"}}, "/vms VM.Audit\n/pool Pool.Audit"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, n := range engine.CallNeeds(lxc.ReadCalls(tc.r)) {
				got = append(got, n.Path+" "+strings.Join(n.Privs, "+"))
			}
			if strings.Join(got, "\n") != tc.want {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), tc.want)
			}
		})
	}
}
