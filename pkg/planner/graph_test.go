package planner

import (
	"testing"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/google/go-cmp/cmp"
	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/spec"
)

// TestBridgeUpdateCarriesLiveSettings: PVE's PUT derives the interface's
// method from the call, so settings the spec does not manage (the address
// above all) must travel with every update, in one spelling only.
func TestBridgeUpdateCarriesLiveSettings(t *testing.T) {
	liveBridge := pve.ConfigOf(map[string]string{
		"iface": "vmbr1", "type": "bridge", "method": "static", "method6": "manual", "families": `["inet"]`,
		"bridge_ports": "eno2", "bridge_stp": "off", "bridge_fd": "0", "autostart": "1", "active": "1", "priority": "5",
		"cidr": "10.0.0.2/24", "address": "10.0.0.2", "netmask": "24", "gateway": "10.0.0.1",
		"comments": "uplink\n", "bridge_vids": "2-4094",
	})
	tests := []struct {
		name   string
		params map[string]string
		remove []string
		want   map[string]string
	}{
		{
			name:   "unmanaged address, gateway and comment are kept",
			params: map[string]string{"bridge_vlan_aware": "1"},
			want: map[string]string{"type": "bridge", "bridge_vlan_aware": "1", "bridge_ports": "eno2", "autostart": "1",
				"cidr": "10.0.0.2/24", "gateway": "10.0.0.1", "comments": "uplink", "bridge_vids": "2-4094"},
		},
		{
			name:   "managed address in the other spelling wins",
			params: map[string]string{"address": "10.0.0.3", "netmask": "24"},
			want: map[string]string{"type": "bridge", "address": "10.0.0.3", "netmask": "24", "bridge_ports": "eno2",
				"autostart": "1", "gateway": "10.0.0.1", "comments": "uplink", "bridge_vids": "2-4094"},
		},
		{
			name:   "removed keys are not carried",
			params: map[string]string{"bridge_ports": "eno3"},
			remove: []string{"cidr", "gateway"},
			want: map[string]string{"type": "bridge", "bridge_ports": "eno3", "autostart": "1",
				"comments": "uplink", "bridge_vids": "2-4094", "delete": "cidr,gateway"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			params := map[string]string{"node": "pve", "iface": "vmbr1"}
			for k, v := range tt.params {
				params[k] = v
			}
			br := &spec.Resource{Kind: spec.KindLinuxBridge, Name: "vmbr1", State: spec.Present, Params: spec.ParamsOf(params), Remove: tt.remove}
			set := &spec.Set{Resources: []*spec.Resource{br}, Graph: &spec.Graph{Deps: map[string][]string{}}}
			live := map[string]*engine.LiveObj{"LinuxBridge/vmbr1": {Exists: true, Node: "pve", Config: liveBridge, Digest: engine.FieldsDigest(liveBridge)}}
			p, err := build(t, set, live, engine.Options{})
			if err != nil {
				t.Fatalf("Build: %v", err)
			}
			c := p.Change("LinuxBridge/vmbr1")
			if c.Action != engine.Update {
				t.Fatalf("action: got %v want update", c.Action)
			}
			if diff := cmp.Diff(tt.want, c.Params); diff != "" {
				t.Errorf("PUT params: got %v want %v (-want +got):\n%s", c.Params, tt.want, diff)
			}
		})
	}
}

// twoBridges is a node with two bridges, one VM on each, and the node's
// commit; the VMs name their bridges only through net0 (implicit edges).
func twoBridges() (*spec.Set, map[string]*engine.LiveObj) {
	bridge := func(name string) *spec.Resource {
		return &spec.Resource{Kind: spec.KindLinuxBridge, Name: name, State: spec.Present,
			Params: spec.ParamsOf(map[string]string{"node": "pve", "iface": name, "bridge_ports": "none"})}
	}
	vm := func(name, vmid, br string) *spec.Resource {
		return &spec.Resource{Kind: spec.KindQemuVM, Name: name, State: spec.Present,
			DependsOn: []spec.Ref{{Kind: spec.KindLinuxBridge, Name: br}},
			Params:    spec.ParamsOf(map[string]string{"node": "pve", "vmid": vmid, "name": name, "net0": "virtio,bridge=" + br})}
	}
	na := &spec.Resource{Kind: spec.KindNetworkApply, Name: "pve", State: spec.Present,
		DependsOn: []spec.Ref{{Kind: spec.KindLinuxBridge, Name: "vmbr1"}, {Kind: spec.KindLinuxBridge, Name: "vmbr2"}},
		Params:    spec.ParamsOf(map[string]string{"node": "pve"})}
	set := &spec.Set{Resources: []*spec.Resource{bridge("vmbr1"), bridge("vmbr2"), na, vm("a", "101", "vmbr1"), vm("b", "102", "vmbr2")}}
	set.Graph = &spec.Graph{Deps: map[string][]string{}}
	for _, r := range set.Resources {
		for _, d := range r.DependsOn {
			set.DepGraph().Deps[r.Address()] = append(set.DepGraph().Deps[r.Address()], d.String())
		}
	}
	brLive := func(name string) *engine.LiveObj {
		cfg := pve.ConfigOf(map[string]string{"iface": name, "type": "bridge", "bridge_ports": "none"})
		return &engine.LiveObj{Exists: true, Node: "pve", Config: cfg, Digest: engine.FieldsDigest(cfg)}
	}
	vmLive := func(name string, vmid int, br string) *engine.LiveObj {
		return &engine.LiveObj{Exists: true, Node: "pve", State: &guestLive{VMID: vmid, Status: "stopped"}, Config: pve.ConfigOf(map[string]string{
			"name": name, "net0": "virtio=BC:24:11:00:00:01,bridge=" + br})}
	}
	live := map[string]*engine.LiveObj{
		"LinuxBridge/vmbr1": brLive("vmbr1"), "LinuxBridge/vmbr2": brLive("vmbr2"),
		"NetworkApply/pve": {Exists: true, Node: "pve", Config: pve.ConfigOf(map[string]string{"changes": ""})},
		"QemuVM/a":         vmLive("a", 101, "vmbr1"), "QemuVM/b": vmLive("b", 102, "vmbr2"),
	}
	return set, live
}

func TestBuildGraphRules(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(*spec.Set, map[string]*engine.LiveObj)
		opts    engine.Options
		want    []string
		wantErr string
	}{
		{
			// A VM on a new bridge must not start before the node commits it.
			name: "users of a bridge wait for the commit",
			mutate: func(s *spec.Set, l map[string]*engine.LiveObj) {
				l["LinuxBridge/vmbr1"] = &engine.LiveObj{Node: "pve"}
				l["QemuVM/a"] = &engine.LiveObj{Node: "pve", State: &guestLive{VMID: 101}}
			},
			want: []string{
				"create LinuxBridge/vmbr1",
				"noop LinuxBridge/vmbr2",
				"apply NetworkApply/pve <- LinuxBridge/vmbr1,LinuxBridge/vmbr2",
				"create QemuVM/a <- LinuxBridge/vmbr1,NetworkApply/pve",
				"noop QemuVM/b <- LinuxBridge/vmbr2,NetworkApply/pve",
			},
		},
		{
			name: "target of a bridge takes the commit",
			mutate: func(s *spec.Set, l map[string]*engine.LiveObj) {
				l["LinuxBridge/vmbr1"] = &engine.LiveObj{Node: "pve"}
			},
			opts: engine.Options{Targets: []string{"LinuxBridge/vmbr1"}},
			want: []string{
				"create LinuxBridge/vmbr1",
				"apply NetworkApply/pve <- LinuxBridge/vmbr1",
			},
		},
		{
			// The commit is needed, not the other bridge of the node nor its VM.
			name: "destroy target of one bridge leaves the other alone",
			opts: engine.Options{Destroy: true, Targets: []string{"LinuxBridge/vmbr1"}},
			want: []string{
				"delete QemuVM/a",
				"delete LinuxBridge/vmbr1 <- QemuVM/a",
				"apply NetworkApply/pve <- LinuxBridge/vmbr1",
			},
		},
		{
			name: "destroy keeps the bridge of a protected VM only",
			mutate: func(s *spec.Set, l map[string]*engine.LiveObj) {
				s.Lookup("QemuVM/b").Protected = true
				// Without an explicit dependsOn on the commit, b needs vmbr2 only.
			},
			opts: engine.Options{Destroy: true},
			want: []string{
				"delete QemuVM/a",
				"delete LinuxBridge/vmbr1 <- QemuVM/a",
				"noop QemuVM/b",
				"noop LinuxBridge/vmbr2 <- QemuVM/b",
				"apply NetworkApply/pve <- LinuxBridge/vmbr1,LinuxBridge/vmbr2",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set, live := twoBridges()
			if tt.mutate != nil {
				tt.mutate(set, live)
			}
			p, err := build(t, set, live, tt.opts)
			if err != nil {
				t.Fatalf("Build: %v", err)
			}
			got := summary(p)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("plan: got %q want %q (-want +got):\n%s", got, tt.want, diff)
			}
		})
	}
}

func TestBuildAbsentUserGoesFirst(t *testing.T) {
	pool := &spec.Resource{Kind: spec.KindPool, Name: "p", State: spec.Absent, Params: spec.ParamsOf(map[string]string{"poolid": "p"})}
	vm := &spec.Resource{Kind: spec.KindQemuVM, Name: "vm", State: spec.Absent,
		DependsOn: []spec.Ref{{Kind: spec.KindPool, Name: "p"}},
		Params:    spec.ParamsOf(map[string]string{"vmid": "100", "name": "vm", "pool": "p"})}
	keep := &spec.Resource{Kind: spec.KindPool, Name: "q", State: spec.Present, Params: spec.ParamsOf(map[string]string{"poolid": "q"})}
	vm2 := &spec.Resource{Kind: spec.KindQemuVM, Name: "vm2", State: spec.Absent,
		DependsOn: []spec.Ref{{Kind: spec.KindPool, Name: "q"}},
		Params:    spec.ParamsOf(map[string]string{"vmid": "101", "name": "vm2", "pool": "q"})}
	set := &spec.Set{Resources: []*spec.Resource{pool, vm, keep, vm2}, Graph: &spec.Graph{Deps: map[string][]string{
		"QemuVM/vm": {"Pool/p"}, "QemuVM/vm2": {"Pool/q"},
	}}}
	live := map[string]*engine.LiveObj{
		"Pool/p":     {Exists: true, Config: pve.ConfigOf(map[string]string{"poolid": "p"})},
		"Pool/q":     {Exists: true, Config: pve.ConfigOf(map[string]string{"poolid": "q"})},
		"QemuVM/vm":  {Exists: true, Node: "pve", State: &guestLive{VMID: 100, Status: "stopped", Pool: "p"}, Config: pve.ConfigOf(map[string]string{"name": "vm"})},
		"QemuVM/vm2": {Exists: true, Node: "pve", State: &guestLive{VMID: 101, Status: "stopped", Pool: "q"}, Config: pve.ConfigOf(map[string]string{"name": "vm2"})},
	}
	p, err := build(t, set, live, engine.Options{})
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	want := []string{"noop Pool/q", "delete QemuVM/vm", "delete Pool/p <- QemuVM/vm", "delete QemuVM/vm2 <- Pool/q"}
	if diff := cmp.Diff(want, summary(p)); diff != "" {
		t.Errorf("plan: got %q want %q (-want +got):\n%s", summary(p), want, diff)
	}
}
