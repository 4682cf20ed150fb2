package planner

import (
	"context"
	"strings"
	"testing"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/spec"
)

// example01 is shared/examples/01-bridge-and-vm.yaml as spec.Load gives it.
func example01() *spec.Set {
	on := true
	br := &spec.Resource{Kind: spec.KindLinuxBridge, Name: "vmbr1", State: spec.Present,
		Params: spec.ParamsOf(map[string]string{"node": "pve", "iface": "vmbr1", "bridge_ports": "eno2", "bridge_vlan_aware": "1", "autostart": "1"})}
	na := &spec.Resource{Kind: spec.KindNetworkApply, Name: "pve", State: spec.Present,
		DependsOn: []spec.Ref{{Kind: spec.KindLinuxBridge, Name: "vmbr1"}},
		Params:    spec.ParamsOf(map[string]string{"node": "pve"})}
	vm := &spec.Resource{Kind: spec.KindQemuVM, Name: "app-vm-1", State: spec.Present,
		DependsOn: []spec.Ref{{Kind: spec.KindNetworkApply, Name: "pve"}},
		Params: spec.ParamsOf(map[string]string{"node": "pve", "vmid": "100", "name": "app-vm-1", "memory": "2048", "cores": "2",
			"sockets": "1", "cpu": "host", "ostype": "l26", "scsihw": "virtio-scsi-pci", "scsi0": "local-lvm:32",
			"net0": "virtio,bridge=vmbr0", "net1": "virtio,bridge=vmbr1,tag=100", "boot": "order=scsi0;net0"}),
		Keys: &spec.GuestKeys{Running: &on}}
	return &spec.Set{
		Resources: []*spec.Resource{br, na, vm},
		Graph: &spec.Graph{Deps: map[string][]string{
			"LinuxBridge/vmbr1": nil,
			"NetworkApply/pve":  {"LinuxBridge/vmbr1"},
			"QemuVM/app-vm-1":   {"NetworkApply/pve"},
		}},
	}
}

// liveApplied is example01's live state after a successful apply.
func liveApplied() map[string]*engine.LiveObj {
	return map[string]*engine.LiveObj{
		"LinuxBridge/vmbr1": {Exists: true, Node: "pve", Digest: "d-br", Config: pve.ConfigOf(map[string]string{
			"iface": "vmbr1", "type": "bridge", "bridge_ports": "eno2", "bridge_vlan_aware": "1", "autostart": "1", "active": "1"})},
		"NetworkApply/pve": {Exists: true, Node: "pve", Config: pve.ConfigOf(map[string]string{"changes": ""})},
		"QemuVM/app-vm-1": {Exists: true, Node: "pve", State: &guestLive{VMID: 100, Status: "running"}, Digest: "d-vm", Config: pve.ConfigOf(map[string]string{
			"name": "app-vm-1", "memory": "2048", "cores": "2", "sockets": "1", "cpu": "host", "ostype": "l26",
			"scsihw": "virtio-scsi-pci", "scsi0": "local-lvm:vm-100-disk-0,size=32G",
			"net0": "virtio=BC:24:11:00:00:01,bridge=vmbr0", "net1": "virtio=BC:24:11:00:00:02,bridge=vmbr1,tag=100",
			"boot": "order=scsi0;net0", "digest": "d-vm"})},
	}
}

func liveEmpty() map[string]*engine.LiveObj {
	return map[string]*engine.LiveObj{
		"LinuxBridge/vmbr1": {Node: "pve"},
		"NetworkApply/pve":  {Exists: true, Node: "pve", Config: pve.ConfigOf(map[string]string{"changes": ""})},
		"QemuVM/app-vm-1":   {Node: "pve", State: &guestLive{VMID: 100}},
	}
}

// example01With is example01 with its VM edited.
func example01With(edit func(vm *spec.Resource)) func() *spec.Set {
	return func() *spec.Set {
		s := example01()
		edit(s.Lookup("QemuVM/app-vm-1"))
		return s
	}
}

// liveAppliedWith is liveApplied with key of addr's config set to value.
func liveAppliedWith(addr, key, value string) func() map[string]*engine.LiveObj {
	return func() map[string]*engine.LiveObj {
		l := liveApplied()
		l[addr].Config.Set(key, value)
		return l
	}
}

// example01Plan is the summary of a plan of example01 taking these
// actions on its bridge, its commit and its VM.
func example01Plan(bridge, commit, vm string) []string {
	return []string{
		bridge + " LinuxBridge/vmbr1",
		commit + " NetworkApply/pve <- LinuxBridge/vmbr1",
		vm + " QemuVM/app-vm-1 <- NetworkApply/pve",
	}
}

// example01Destroy is the summary of a destroy of example01 taking these
// actions on its VM, its bridge and its commit.
func example01Destroy(vm, bridge, commit string) []string {
	return []string{
		vm + " QemuVM/app-vm-1",
		bridge + " LinuxBridge/vmbr1 <- QemuVM/app-vm-1",
		commit + " NetworkApply/pve <- LinuxBridge/vmbr1,QemuVM/app-vm-1",
	}
}

func build(t *testing.T, set *spec.Set, objs map[string]*engine.LiveObj, opts engine.Options) (*engine.Plan, error) {
	t.Helper()
	return engine.Build(context.Background(), set, &engine.Observed{Objs: objs}, opts)
}

// wantPlan stops the test unless p's summary is want; what names the plan.
func wantPlan(t *testing.T, what string, p *engine.Plan, want []string) {
	t.Helper()
	if diff := cmp.Diff(want, summary(p)); diff != "" {
		t.Fatalf("%s (-want +got):\n%s", what, diff)
	}
}

// succeeded checks err against a case's errHas: with errHas set, err
// must contain it and the case ends there (false); without, err must be
// nil (true: check the result).
func succeeded(t *testing.T, err error, errHas string) bool {
	t.Helper()
	if errHas != "" {
		if err == nil || !strings.Contains(err.Error(), errHas) {
			t.Fatalf("got error %v, want one containing %q", err, errHas)
		}
		return false
	}
	if err != nil {
		t.Fatalf("got error %v, want none", err)
	}
	return true
}

// countWhere is how many of list f holds for.
func countWhere[T any](list []T, f func(T) bool) int {
	n := 0
	for _, x := range list {
		if f(x) {
			n++
		}
	}
	return n
}

// summary renders a plan compactly: "action address <- deps".
func summary(p *engine.Plan) []string {
	var out []string
	for _, c := range p.Changes {
		s := c.Action.String() + " " + c.Address
		if len(c.DependsOn) > 0 {
			s += " <- " + strings.Join(c.DependsOn, ",")
		}
		out = append(out, s)
	}
	return out
}

func TestBuild(t *testing.T) {
	tests := []struct {
		name   string
		set    func() *spec.Set
		live   func() map[string]*engine.LiveObj
		opts   engine.Options
		want   []string
		errHas string
	}{
		{
			name: "fresh cluster creates everything",
			set:  example01, live: liveEmpty,
			want: example01Plan("create", "apply", "create"),
		},
		{
			name: "applied state is all noop",
			set:  example01, live: liveApplied,
			want: example01Plan("noop", "noop", "noop"),
		},
		{
			name: "pending network changes are committed",
			set:  example01,
			live: liveAppliedWith("NetworkApply/pve", "changes", "--- /etc/network/interfaces\n+++ ..."),
			want: example01Plan("noop", "apply", "noop"),
		},
		{
			name: "destroy reverses and commits after the bridge is gone",
			set:  example01, live: liveApplied, opts: engine.Options{Destroy: true},
			want: example01Destroy("delete", "delete", "apply"),
		},
		{
			name: "destroy of a protected VM skips it",
			set:  example01With(func(vm *spec.Resource) { vm.Protected = true }),
			live: liveApplied, opts: engine.Options{Destroy: true},
			// The VM needs the committed network of its node: its bridge stays.
			want: example01Destroy("noop", "noop", "noop"),
		},
		{
			name: "target takes its dependencies",
			set:  example01, live: liveEmpty, opts: engine.Options{Targets: []string{"NetworkApply/pve"}},
			want: []string{
				"create LinuxBridge/vmbr1",
				"apply NetworkApply/pve <- LinuxBridge/vmbr1",
			},
		},
		{
			name: "destroy target takes its dependents and the commit",
			set:  example01, live: liveApplied, opts: engine.Options{Destroy: true, Targets: []string{"LinuxBridge/vmbr1"}},
			want: example01Destroy("delete", "delete", "apply"),
		},
		{
			// A commit has nothing to remove of its own: in the reversed
			// graph a target would take every interface of its node and
			// every guest on them. Refused, naming what to target.
			name: "destroy target of a NetworkApply is refused",
			set:  example01, live: liveApplied, opts: engine.Options{Destroy: true, Targets: []string{"NetworkApply/pve"}},
			errHas: "a network commit has nothing of its own to destroy; target the interfaces",
		},
		{
			name: "destroy target of a leaf",
			set:  example01, live: liveApplied, opts: engine.Options{Destroy: true, Targets: []string{"QemuVM/app-vm-1"}},
			want: []string{"delete QemuVM/app-vm-1"},
		},
		{
			name: "unknown target",
			set:  example01, live: liveApplied, opts: engine.Options{Targets: []string{"QemuVM/nope"}},
			errHas: "target QemuVM/nope is not a resource",
		},
		{
			name: "state absent deletes",
			set:  example01With(func(vm *spec.Resource) { vm.State = spec.Absent }),
			live: liveApplied,
			want: example01Plan("noop", "noop", "delete"),
		},
		{
			name: "state absent on a protected VM is an error",
			set: example01With(func(vm *spec.Resource) {
				vm.State, vm.Protected = spec.Absent, true
			}),
			live:   liveApplied,
			errHas: "QemuVM/app-vm-1 is protected: refusing to delete",
		},
		{
			name: "node move migrates",
			set:  example01With(func(vm *spec.Resource) { vm.Params.Set("node", "pve2") }),
			live: liveApplied,
			want: example01Plan("noop", "noop", "update"),
		},
		{
			// A migration destroys nothing: protection does not stop it.
			name: "node move of a protected VM migrates",
			set: example01With(func(vm *spec.Resource) {
				vm.Params.Set("node", "pve2")
				vm.Protected = true
			}),
			live: liveApplied,
			want: example01Plan("noop", "noop", "update"),
		},
		{
			name: "bridge of another type replaces",
			set:  example01,
			live: liveAppliedWith("LinuxBridge/vmbr1", "type", "bond"),
			want: example01Plan("replace", "apply", "noop"),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := build(t, tt.set(), tt.live(), tt.opts)
			if !succeeded(t, err, tt.errHas) {
				return
			}
			if diff := cmp.Diff(tt.want, summary(p)); diff != "" {
				t.Errorf("plan: got %q want %q (-want +got):\n%s", summary(p), tt.want, diff)
			}
		})
	}
}

func TestBuildUpdate(t *testing.T) {
	set := example01()
	set.Lookup("QemuVM/app-vm-1").Params.Set("memory", "4096")
	live := liveApplied()
	liveOf(live["QemuVM/app-vm-1"]).Status = "stopped"
	p, err := build(t, set, live, engine.Options{})
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	c := p.Change("QemuVM/app-vm-1")
	want := &engine.Change{
		Address: "QemuVM/app-vm-1", Action: engine.Update,
		Diff: []engine.FieldDiff{
			{Path: "memory", Before: "2048", After: "4096"},
			{Path: "running", Before: false, After: true},
		},
		Reasons: []string{"memory changed", "power state stopped, wanted running"},
		Node:    "pve", State: &guestState{VMID: 100, Stopped: true}, Digest: "d-vm",
		Fingerprint: engine.Fingerprint(live["QemuVM/app-vm-1"]),
		DependsOn:   []string{"NetworkApply/pve"},
		Params:      map[string]string{"memory": "4096"},
		// What apply FILE checks the applying token against (review.go).
		Needs: []engine.Need{
			{Path: "/vms/100", Privs: []string{"VM.Config.Memory"}, Why: "to set memory"},
			{Path: "/vms/100", Privs: []string{"VM.PowerMgmt"}, Why: "to start or shut down the VM"},
		},
	}
	if diff := cmp.Diff(want, c, cmpIgnoreResource); diff != "" {
		t.Errorf("change: (-want +got):\n%s", diff)
	}
}

var cmpIgnoreResource = cmp.FilterPath(func(p cmp.Path) bool { return p.String() == "Resource" }, cmp.Ignore())

func TestBuildShrinkRefused(t *testing.T) {
	set := example01()
	set.Lookup("QemuVM/app-vm-1").Params.Set("scsi0", "local-lvm:16")
	_, err := build(t, set, liveApplied(), engine.Options{})
	if err == nil || !strings.Contains(err.Error(), "cannot shrink") {
		t.Fatalf("Build: got %v want a shrink error", err)
	}
}

func TestReverseDepsReroute(t *testing.T) {
	// Two nodes; pve has two bridges and a VM using them, pve2 a bridge only.
	fwd := map[string][]string{
		"LinuxBridge/a":     nil,
		"LinuxBridge/b":     nil,
		"LinuxBridge/c":     nil,
		"NetworkApply/pve":  {"LinuxBridge/a", "LinuxBridge/b"},
		"NetworkApply/pve2": {"LinuxBridge/c"},
		"QemuVM/vm":         {"NetworkApply/pve"},
		"Pool/p":            nil,
	}
	roles := map[string]struct {
		r engine.NetRole
		k string
	}{
		"LinuxBridge/a": {engine.NetStage, "pve"}, "LinuxBridge/b": {engine.NetStage, "pve"}, "LinuxBridge/c": {engine.NetStage, "pve2"},
		"NetworkApply/pve": {engine.NetCommit, "pve"}, "NetworkApply/pve2": {engine.NetCommit, "pve2"},
	}
	got := engine.ReverseDeps(fwd, func(a string) (engine.NetRole, string) { return roles[a].r, roles[a].k })
	want := map[string][]string{
		"LinuxBridge/a":     {"QemuVM/vm"},
		"LinuxBridge/b":     {"QemuVM/vm"},
		"LinuxBridge/c":     {},
		"NetworkApply/pve":  {"LinuxBridge/a", "LinuxBridge/b", "QemuVM/vm"},
		"NetworkApply/pve2": {"LinuxBridge/c"},
		"QemuVM/vm":         {},
		"Pool/p":            {},
	}
	if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("reverseDeps: (-want +got):\n%s", diff)
	}
	sel := map[string]bool{}
	for a := range got {
		sel[a] = true
	}
	if _, err := (&spec.Graph{Deps: got}).OrderOf(sel); err != nil {
		t.Errorf("order of rerouted graph: %v", err)
	}
}

func TestFindQemu(t *testing.T) {
	rows := []pve.ClusterResource{
		{Type: "qemu", VMID: 101, Name: "web", Node: "pve"},
		{Type: "qemu", VMID: 102, Name: "web", Node: "pve"},
		{Type: "qemu", VMID: 9000, Name: "tmpl", Node: "pve", Template: true},
		{Type: "qemu", VMID: 103, Name: "db", Node: "pve"},
		{Type: "qemu", VMID: 104, Name: "VM 104", Node: "pve", Lock: "clone"},
		{Type: "lxc", VMID: 200, Name: "ct", Node: "pve"},
	}
	tests := []struct {
		name   string
		r      *spec.Resource
		vmid   int
		want   int
		errHas string
	}{
		{name: "by vmid", r: &spec.Resource{Name: "web"}, vmid: 102, want: 102},
		{name: "vmid held by another name", r: &spec.Resource{Name: "x"}, vmid: 102, errHas: `vmid 102 is held by VM "web" on node pve, not by "x": refusing to take it over`},
		{name: "vmid of a guest in progress", r: &spec.Resource{Name: "x"}, vmid: 104, want: 104},
		{name: "template spec finds its template", r: &spec.Resource{Name: "tmpl", Params: spec.ParamsOf(map[string]string{"template": "1"})}, want: 9000},
		{name: "by name", r: &spec.Resource{Name: "db"}, want: 103},
		{name: "name param wins", r: &spec.Resource{Name: "x", Params: spec.ParamsOf(map[string]string{"name": "db"})}, want: 103},
		{name: "templates are not matched by name", r: &spec.Resource{Name: "tmpl"}},
		{name: "missing", r: &spec.Resource{Name: "nope"}},
		{name: "ambiguous", r: &spec.Resource{Name: "web"}, errHas: "name web matches VMs 101 and 102: set vmid"},
		{name: "vmid of a container", r: &spec.Resource{Name: "ct"}, vmid: 200, errHas: "is a container"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			row, err := qemu.find(newGuestIndex(pve.QEMU, rows), tt.r, tt.vmid)
			if !succeeded(t, err, tt.errHas) {
				return
			}
			got := 0
			if row != nil {
				got = row.VMID
			}
			if got != tt.want {
				t.Errorf("find: got vmid %d want %d", got, tt.want)
			}
		})
	}
}
