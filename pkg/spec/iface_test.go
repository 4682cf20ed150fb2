package spec

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestInterfaceChecks: what PVE's interfaces writer and reader would refuse
// or drop, and what Linux cannot do with a bridge or a bond, is a validate
// error at the key.
func TestInterfaceChecks(t *testing.T) {
	const bond = "kind: BondInterface\nname: bond0\nspec:\n"
	tests := []struct {
		name string
		yaml string
		want []string // nil: loads fine
	}{
		{name: "the bond of example 04", yaml: bond + "  node: pve\n  slaves: eno3 eno4\n  bond_mode: 802.3ad\n  bond_xmit_hash_policy: layer3+4\n  autostart: true\n"},
		{name: "slaves as a list", yaml: bond + "  slaves: [eno3, eno4]\n  bond_mode: active-backup\n  bond-primary: eno4\n"},
		{
			name: "a bond not named bondN",
			yaml: "kind: BondInterface\nname: uplink\nspec:\n  slaves: eno3\n",
			want: []string{`a.yaml:2: BondInterface/uplink: iface "uplink": PVE recognises a bond by its name only (bond0, bond1, …); any other name reads back as an interface of unknown type`},
		},
		{
			name: "an Open vSwitch mode",
			yaml: bond + "  bond_mode: balance-slb\n",
			want: []string{`a.yaml:4: BondInterface/bond0: bond_mode "balance-slb" is an Open vSwitch bond mode; a Linux bond takes balance-rr, active-backup, balance-xor, broadcast, 802.3ad, balance-tlb, balance-alb`},
		},
		{
			name: "options the mode drops",
			yaml: bond + "  bond_mode: balance-rr\n  bond_xmit_hash_policy: layer2\n  bond-primary: eno3\n  slaves: eno3\n",
			want: []string{
				`a.yaml:5: BondInterface/bond0: bond_xmit_hash_policy is kept only with bond_mode balance-xor or 802.3ad (PVE does not write it for balance-rr, and the plan would never settle): drop it, or change bond_mode`,
				`a.yaml:6: BondInterface/bond0: bond-primary is kept only with bond_mode active-backup (PVE does not write it for balance-rr, and the plan would never settle): drop it, or change bond_mode`,
			},
		},
		{
			name: "a primary that is not a slave",
			yaml: bond + "  bond_mode: active-backup\n  bond-primary: eno2\n  slaves: eno3 eno4\n",
			want: []string{`a.yaml:5: BondInterface/bond0: bond-primary "eno2" is not one of the slaves (PVE refuses: bond-primary interface is not a slave)`},
		},
		{
			name: "commas in the slaves and ports",
			yaml: bond + "  slaves: eno3,eno4\n---\nkind: LinuxBridge\nname: vmbr1\nspec:\n  bridge_ports: eno1;eno2\n",
			want: []string{
				`a.yaml:4: BondInterface/bond0: slaves "eno3,eno4": PVE's writer splits slaves on blanks only, so it would look for one interface "eno3,eno4": separate them with spaces or write a list`,
				`a.yaml:9: LinuxBridge/vmbr1: bridge_ports "eno1;eno2": PVE's writer splits bridge_ports on blanks only, so it would look for one interface "eno1;eno2": separate them with spaces or write a list`,
			},
		},
		{
			name: "an address without its netmask",
			yaml: "kind: LinuxBridge\nname: vmbr1\nspec:\n  address: 192.0.2.1\n  address6: 2001:db8::1\n  netmask6: 64\n",
			want: []string{`a.yaml:4: spec.address needs netmask beside it: PVE refuses address without netmask ("missing property required by 'address'"); set netmask too, or leave address out`},
		},
		{
			name: "a bridge key on a bond",
			yaml: bond + "  bridge_ports: eno3\n",
			want: []string{`a.yaml:4: unknown field "bridge_ports" in BondInterface spec`},
		},
		{
			name: "a bridge and a bond share the interface names",
			yaml: bond + "  slaves: eno3\n---\nkind: LinuxBridge\nname: lan\nspec:\n  iface: bond0\n",
			want: []string{`a.yaml:9: LinuxBridge/lan has the same iface "bond0" on the default node as BondInterface/bond0 (at a.yaml:2): both would manage the same network interface (bridges and bonds share the node's interface names); remove one of them`},
		},
		{
			name: "a port on two interfaces",
			yaml: bond + "  slaves: eno3 eno4\n---\nkind: LinuxBridge\nname: vmbr1\nspec:\n  bridge_ports: eno4\n",
			want: []string{`a.yaml:9: LinuxBridge/vmbr1 has the same port "eno4" on the default node as BondInterface/bond0 (at a.yaml:4): PVE puts a port on one interface only (pve-manager Network.pm check_duplicate_ports): remove it from one of them`},
		},
		{
			name: "a port given up by an absent interface",
			yaml: "kind: BondInterface\nname: bond0\nstate: absent\nspec:\n  slaves: eno3\n---\nkind: LinuxBridge\nname: vmbr1\nspec:\n  bridge_ports: eno3\n",
		},
		{
			name: "a bridge as a bridge's port",
			yaml: "kind: LinuxBridge\nname: vmbr1\nspec:\n  bridge_ports: vmbr2\n---\nkind: LinuxBridge\nname: vmbr2\n",
			want: []string{`a.yaml:4: LinuxBridge/vmbr1: bridge_ports names LinuxBridge/vmbr2, a bridge: Linux does not make a bridge the port of another bridge (the kernel refuses it when the commit brings the bridge up); use a bond, a NIC or a VLAN (vmbr2.10) as the port`},
		},
		{
			name: "a VM's NIC on a bond",
			yaml: bond + "  slaves: eno3\n---\nkind: QemuVM\nname: web\nspec:\n  net1: virtio,bridge=bond0\n",
			want: []string{`a.yaml:9: QemuVM/web: net1 names BondInterface/bond0, a bond: a guest's NIC plugs into a bridge only (PVE fails the start with "bridge 'bond0' does not exist"); name a LinuxBridge whose bridge_ports include bond0`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantDiags(t, tt.yaml, tt.want)
		})
	}
}

// TestInterfaceEdges: a bridge on a bond of the specs, a bond of bonds and
// a node's commit wait for the interfaces they use.
func TestInterfaceEdges(t *testing.T) {
	const y = `kind: BondInterface
name: bond1
spec:
  slaves: bond0
---
kind: BondInterface
name: bond0
spec:
  slaves: eno3 eno4
---
kind: LinuxBridge
name: vmbr1
spec:
  bridge_ports: bond1 eno2.10
---
kind: BondInterface
name: bond2
spec:
  node: pve2
  slaves: eno3
---
kind: NetworkApply
name: pve
`
	set := mustLoad(t, map[string]string{"a.yaml": y}, nil)
	want := map[string][]string{
		"BondInterface/bond0": {},
		"BondInterface/bond1": {"BondInterface/bond0"},
		"BondInterface/bond2": {},
		"LinuxBridge/vmbr1":   {"BondInterface/bond1"},
		"NetworkApply/pve":    {"BondInterface/bond0", "BondInterface/bond1", "LinuxBridge/vmbr1"},
	}
	if diff := cmp.Diff(want, set.DepGraph().Deps); diff != "" {
		t.Errorf("edges (-want +got):\n%s", diff)
	}
}

// TestNetworkApplyKeys: revertOnFailure is NetworkApply's own boolean.
func TestNetworkApplyKeys(t *testing.T) {
	set := mustLoad(t, map[string]string{"a.yaml": "kind: NetworkApply\nname: pve\nspec:\n  revertOnFailure: true\n"}, nil)
	if k := NetApply(set.Resources[0]); k.RevertOnFailure == nil || !*k.RevertOnFailure {
		t.Errorf("revertOnFailure: got %+v, want true", k)
	}
	if k := NetApply(&Resource{}); k.RevertOnFailure != nil {
		t.Errorf("unset: got %+v, want nil", k)
	}
	_, got := loadFiles(t, map[string]string{"a.yaml": "kind: NetworkApply\nname: pve\nspec:\n  revertOnFailure: please\n"}, nil)
	want := []string{`a.yaml:4: spec.revertOnFailure: must be a boolean (true or false), got a string`}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("diagnostics (-want +got):\n%s", diff)
	}
}
