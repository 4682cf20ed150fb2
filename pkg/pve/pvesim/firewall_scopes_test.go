package pvesim_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/pvectl/pvectl/pkg/pve/pvesim"
	"github.com/pvectl/pvectl/pkg/pve/pvesim/simtest"
)

// moveto as update_rule has it (pve-firewall Rules.pm): the rule is put
// before the rule at moveto in the old list, so a move down lands one
// above moveto; a moveto past the end makes it last; a moveto equal to
// pos is an update.
func TestFirewallMoveto(t *testing.T) {
	e := startEnv(t, simtest.Options{Conformance: true})
	for _, c := range []string{"e", "d", "c", "b", "a"} {
		e.ok(nil, "POST", "/cluster/firewall/rules", "type", "in", "action", "ACCEPT", "comment", c)
	}
	cases := []struct {
		pos, moveto string
		want        string
	}{
		{"0", "2", "b a c d e"},
		{"3", "1", "b d a c e"},
		{"1", "99", "b a c e d"},
		{"4", "0", "d b a c e"},
		{"2", "2", "d b ignored c e"}, // moveto = pos: an update
	}
	for _, tc := range cases {
		e.ok(nil, "PUT", "/cluster/firewall/rules/"+tc.pos, "moveto", tc.moveto, "comment", "ignored")
		list, _ := fwRules(t, e, "/cluster/firewall/rules")
		var got []string
		for _, r := range list {
			got = append(got, r["comment"].(string))
		}
		if strings.Join(got, " ") != tc.want {
			t.Errorf("move %s to %s: got %q want %q", tc.pos, tc.moveto, got, tc.want)
		}
	}
}

// The node and guest scopes: their own options and rules, guest IP sets
// and aliases, refs from the cluster ("dc") and the guest ("guest"); a
// guest rule may use the cluster's IP sets and aliases. A destroyed guest
// takes its firewall file along; a clone gets a copy.
func TestFirewallNodeAndGuestScopes(t *testing.T) {
	e := startEnv(t, simtest.Options{Conformance: true})
	e.ok(nil, "POST", "/cluster/firewall/ipset", "name", "mgmt")
	e.ok(nil, "PUT", "/nodes/pve/firewall/options", "enable", "1", "log_level_in", "info", "nf_conntrack_max", "65536", "nosmurfs", "1")
	opts := e.object("/nodes/pve/firewall/options")
	if opts["enable"] != float64(1) || opts["log_level_in"] != "info" || opts["nf_conntrack_max"] != float64(65536) || opts["nosmurfs"] != float64(1) {
		t.Errorf("node options: got %v", opts)
	}
	e.ok(nil, "POST", "/nodes/pve/firewall/rules", "type", "in", "action", "ACCEPT", "iface", "vmbr0", "source", "+mgmt", "macro", "SSH", "enable", "1")
	if _, short := fwRules(t, e, "/nodes/pve/firewall/rules"); len(short) != 1 || short[0] != "in ACCEPT macro=SSH source=+mgmt" {
		t.Errorf("node rules: got %q", short)
	}

	e.run("POST", "/nodes/pve/qemu", "vmid", "100", "net0", "virtio,bridge=vmbr0,firewall=1")
	const g = "/nodes/pve/qemu/100/firewall"
	e.ok(nil, "PUT", g+"/options", "enable", "1", "policy_in", "DROP", "ipfilter", "1")
	e.ok(nil, "POST", g+"/aliases", "name", "self", "cidr", "192.0.2.10")
	e.ok(nil, "POST", g+"/ipset", "name", "ipfilter-net0")
	e.ok(nil, "POST", g+"/ipset/ipfilter-net0", "cidr", "self")
	e.ok(nil, "POST", g+"/rules", "type", "in", "action", "ACCEPT", "iface", "net0", "source", "+dc/mgmt", "proto", "tcp", "dport", "443", "enable", "1")
	e.ok(nil, "POST", g+"/rules", "type", "out", "action", "ACCEPT", "source", "self", "enable", "1")
	if _, short := fwRules(t, e, g+"/rules"); len(short) != 2 {
		t.Errorf("guest rules: got %q", short)
	}
	refs := e.rows(g + "/refs")
	var got []string
	for _, r := range refs {
		got = append(got, r["scope"].(string)+":"+r["ref"].(string))
	}
	if strings.Join(got, " ") != "dc:+mgmt guest:+ipfilter-net0 guest:self" {
		t.Errorf("guest refs: got %q", got)
	}

	e.run("POST", "/nodes/pve/qemu/100/clone", "newid", "101")
	if _, short := fwRules(t, e, "/nodes/pve/qemu/101/firewall/rules"); len(short) != 2 {
		t.Errorf("clone's rules: got %q, want the source's copied", short)
	}
	e.run("DELETE", "/nodes/pve/qemu/100")
	if _, short := fwRules(t, e, g+"/rules"); len(short) != 0 {
		t.Errorf("a destroyed guest's rules: got %q, want its file gone", short)
	}
	o := e.object(g + "/options")
	if len(o) != 1 {
		t.Errorf("a destroyed guest's options: got %v, want only the digest", o)
	}
}

// A security group renamed: every group rule naming it, in the cluster's,
// a node's and a guest's rules, follows (Groups.pm create_security_group
// with rename); a group still named by rules can be deleted once empty
// (PVE does not look) and the rules stay.
func TestFirewallGroupRename(t *testing.T) {
	e := startEnv(t, simtest.Options{Conformance: true})
	e.run("POST", "/nodes/pve/lxc", "vmid", "200", "ostemplate", "local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst", "rootfs", "local-lvm:1")
	e.ok(nil, "POST", "/cluster/firewall/groups", "group", "old", "comment", "c")
	for _, p := range []string{"/cluster/firewall/rules", "/nodes/pve/firewall/rules", "/nodes/pve/lxc/200/firewall/rules"} {
		e.ok(nil, "POST", p, "type", "group", "action", "old")
	}
	groups := e.rows("/cluster/firewall/groups")
	e.ok(nil, "POST", "/cluster/firewall/groups", "group", "new", "rename", "old", "digest", groups[0]["digest"].(string))
	for _, p := range []string{"/cluster/firewall/rules", "/nodes/pve/firewall/rules", "/nodes/pve/lxc/200/firewall/rules"} {
		if _, short := fwRules(t, e, p); len(short) != 1 || short[0] != "group new" {
			t.Errorf("%s after the rename: got %q", p, short)
		}
	}
	e.ok(&groups, "GET", "/cluster/firewall/groups")
	if len(groups) != 1 || groups[0]["group"] != "new" || groups[0]["comment"] != "c" {
		t.Errorf("groups after the rename: got %v", groups)
	}
	e.ok(nil, "DELETE", "/cluster/firewall/groups/new")
	if _, short := fwRules(t, e, "/cluster/firewall/rules"); len(short) != 1 {
		t.Errorf("rules naming a deleted group: got %q, want them kept", short)
	}
}

// Rules are what the file reads back as: a rule naming an IP set that
// was deleted since (PVE does not look) lists with its error; names are
// lowercased; all of it survives a restart with a state file.
func TestFirewallReadBackAndState(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	e := startEnv(t, simtest.Options{Sim: pvesim.Options{StateFile: path}, Conformance: true})
	e.ok(nil, "POST", "/cluster/firewall/ipset", "name", "Temp")
	e.ok(nil, "POST", "/cluster/firewall/rules", "type", "in", "action", "DROP", "source", "+temp", "proto", "icmp", "icmp-type", "echo-request")
	if r := e.call("GET", "/cluster/firewall/ipset/Temp"); r.Status != 500 || r.Message != "no such IPSet 'Temp'" {
		t.Errorf("an IP set by the name it was created with: got %d %q, want it lowercased", r.Status, r.Message)
	}
	e.ok(nil, "DELETE", "/cluster/firewall/ipset/temp")
	list, _ := fwRules(t, e, "/cluster/firewall/rules")
	if errs, _ := list[0]["errors"].(map[string]any); errs["source"] != "no such ipset 'temp'" || list[0]["ipversion"] != float64(4) {
		t.Errorf("a rule naming a deleted IP set: got %v", list[0])
	}
	e.ok(nil, "PUT", "/cluster/firewall/options", "enable", "1")
	e.Server.Close()

	e2 := newEnv(t, pvesim.Options{StateFile: path})
	list2, _ := fwRules(t, e2, "/cluster/firewall/rules")
	if len(list2) != 1 || list2[0]["digest"] != list[0]["digest"] {
		t.Errorf("rules after a restart: got %v, want %v", list2, list)
	}
}

// Permissions: the apidoc's (VM.Audit to read a guest's firewall,
// VM.Config.Network to change it; Sys.Audit/Sys.Modify on / for the
// cluster's), checked before the parameters.
func TestFirewallPermissions(t *testing.T) {
	e := startEnv(t, simtest.Options{Conformance: true})
	e.run("POST", "/nodes/pve/qemu", "vmid", "100")
	auth := e.newToken("fw@pve", "tk", false)
	e.grant("/vms/100", "PVEAuditor", "users", "fw@pve")
	if r := e.as(auth, "GET", "/nodes/pve/qemu/100/firewall/rules"); r.Status != 200 {
		t.Errorf("audit a guest's rules: got %d %q", r.Status, r.Message)
	}
	if r := e.as(auth, "POST", "/nodes/pve/qemu/100/firewall/rules", "type", "in", "action", "ACCEPT"); r.Status != 403 ||
		r.Message != "Permission check failed (/vms/100, VM.Config.Network)" {
		t.Errorf("change a guest's rules as an auditor: got %d %q", r.Status, r.Message)
	}
	if r := e.as(auth, "PUT", "/cluster/firewall/options", "enable", "1"); r.Status != 403 {
		t.Errorf("cluster options without Sys.Modify: got %d %q", r.Status, r.Message)
	}
	e.grant("/vms/100", "PVEVMAdmin", "users", "fw@pve")
	if r := e.as(auth, "POST", "/nodes/pve/qemu/100/firewall/rules", "type", "in", "action", "ACCEPT"); r.Status != 200 {
		t.Errorf("change a guest's rules as its admin: got %d %q", r.Status, r.Message)
	}
}

// Each node has its own host.fw (Firewall.pm $hostfw_conf_filename, the
// node a call is proxied to): one node's rules and options are not
// another's.
func TestFirewallHostPerNode(t *testing.T) {
	e := startEnv(t, simtest.Options{Sim: pvesim.Options{Nodes: []string{"pve", "pve2"}}, Conformance: true})
	e.ok(nil, "PUT", "/nodes/pve2/firewall/options", "enable", "0", "tcpflags", "1")
	e.ok(nil, "POST", "/nodes/pve2/firewall/rules", "type", "in", "action", "ACCEPT", "macro", "SSH")
	if _, short := fwRules(t, e, "/nodes/pve/firewall/rules"); len(short) != 0 {
		t.Errorf("pve's rules: got %q, want none", short)
	}
	if _, short := fwRules(t, e, "/nodes/pve2/firewall/rules"); len(short) != 1 {
		t.Errorf("pve2's rules: got %q", short)
	}
	var o1, o2 map[string]any
	e.ok(&o1, "GET", "/nodes/pve/firewall/options")
	e.ok(&o2, "GET", "/nodes/pve2/firewall/options")
	if len(o1) != 1 || o2["enable"] != float64(0) || o2["tcpflags"] != float64(1) {
		t.Errorf("options: pve %v, pve2 %v", o1, o2)
	}
}
