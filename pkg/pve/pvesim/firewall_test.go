package pvesim_test

import (
	"strings"
	"testing"

	"github.com/pvectl/pvectl/pkg/pve/pvesim/simtest"
)

// fwRules reads a rule list as "pos:TYPE ACTION extra…" lines.
func fwRules(t *testing.T, e *env, path string) ([]map[string]any, []string) {
	t.Helper()
	list := e.rows(path)
	var short []string
	for i, r := range list {
		if int(r["pos"].(float64)) != i {
			t.Errorf("%s: rule %d has pos %v", path, i, r["pos"])
		}
		s := r["type"].(string) + " " + r["action"].(string)
		for _, k := range []string{"macro", "proto", "dport", "source", "dest", "comment"} {
			if v, ok := r[k]; ok {
				s += " " + k + "=" + v.(string)
			}
		}
		short = append(short, s)
	}
	return list, short
}

// The cluster firewall end to end over HTTP, behind the schema checker:
// options, IP sets, aliases, a group and rules naming them; POST puts a
// rule first, moveto moves, DELETE renumbers, digests are checked
// (pve-firewall src/PVE/API2/Firewall/Rules.pm, IPSet.pm, Aliases.pm,
// Groups.pm, Cluster.pm).
func TestFirewallClusterScope(t *testing.T) {
	e := startEnv(t, simtest.Options{Conformance: true})
	e.ok(nil, "PUT", "/cluster/firewall/options", "enable", "1", "policy_in", "DROP", "ebtables", "0")
	opts := e.object("/cluster/firewall/options")
	if opts["enable"] != float64(1) || opts["policy_in"] != "DROP" || opts["ebtables"] != float64(0) || opts["digest"] == "" {
		t.Errorf("options: got %v", opts)
	}
	// The anti-lockout call: an enable above 1 is stored as the time
	// (Cluster.pm set_options), read as enabled for a minute.
	e.ok(nil, "PUT", "/cluster/firewall/options", "enable", "2")
	e.ok(&opts, "GET", "/cluster/firewall/options")
	if n, _ := opts["enable"].(float64); n < 1e9 {
		t.Errorf("enable 2: got %v, want the time", opts["enable"])
	}
	e.ok(nil, "PUT", "/cluster/firewall/options", "enable", "1")
	if r := e.call("PUT", "/cluster/firewall/options", "policy_out", "ACCEPT", "digest", "0000"); r.Status != 500 ||
		r.Message != "detected modified configuration - file changed by other user? Try again." {
		t.Errorf("options with a stale digest: got %d %q", r.Status, r.Message)
	}

	e.ok(nil, "POST", "/cluster/firewall/ipset", "name", "Admins", "comment", "the admins")
	e.ok(nil, "POST", "/cluster/firewall/ipset/admins", "cidr", "10.1.2.3/24", "comment", "office")
	e.ok(nil, "POST", "/cluster/firewall/ipset/admins", "cidr", "10.9.9.9/32")
	set := e.rows("/cluster/firewall/ipset/admins")
	if len(set) != 2 || set[0]["cidr"] != "10.1.2.0/24" || set[1]["cidr"] != "10.9.9.9" || set[0]["comment"] != "office" {
		t.Errorf("ipset entries (cleaned, sorted): got %v", set)
	}
	entry := e.object("/cluster/firewall/ipset/admins/10.1.2.0/24")
	if entry["comment"] != "office" {
		t.Errorf("entry by its cidr in the path: got %v", entry)
	}
	e.ok(nil, "POST", "/cluster/firewall/aliases", "name", "Gateway", "cidr", "192.0.2.1/32")
	alias := e.object("/cluster/firewall/aliases/gateway")
	if alias["name"] != "Gateway" || alias["cidr"] != "192.0.2.1" {
		t.Errorf("alias: got %v", alias)
	}
	e.ok(nil, "POST", "/cluster/firewall/groups", "group", "web", "comment", "web servers")
	e.ok(nil, "POST", "/cluster/firewall/groups/web", "type", "in", "action", "ACCEPT", "macro", "http", "enable", "1")

	e.ok(nil, "POST", "/cluster/firewall/rules", "type", "in", "action", "ACCEPT", "proto", "tcp", "dport", "22", "source", "+admins", "enable", "1")
	e.ok(nil, "POST", "/cluster/firewall/rules", "type", "group", "action", "web", "pos", "5")
	e.ok(nil, "POST", "/cluster/firewall/rules", "type", "out", "action", "DROP", "dest", "gateway", "comment", "no gw")
	list, short := fwRules(t, e, "/cluster/firewall/rules")
	want := []string{"out DROP dest=gateway comment=no gw", "group web", "in ACCEPT proto=tcp dport=22 source=+admins"}
	if strings.Join(short, "|") != strings.Join(want, "|") {
		t.Errorf("rules after three POSTs (each first): got %q want %q", short, want)
	}
	if list[0]["enable"] != float64(0) || list[2]["enable"] != float64(1) || list[0]["ipversion"] != float64(4) {
		t.Errorf("enable defaults to 0, alias gives ipversion: got %v", list)
	}
	digest := list[0]["digest"].(string)

	e.ok(nil, "PUT", "/cluster/firewall/rules/0", "moveto", "3", "digest", digest)
	_, short = fwRules(t, e, "/cluster/firewall/rules")
	if want := []string{"group web", "in ACCEPT proto=tcp dport=22 source=+admins", "out DROP dest=gateway comment=no gw"}; strings.Join(short, "|") != strings.Join(want, "|") {
		t.Errorf("after moveto past the end: got %q", short)
	}
	if r := e.call("DELETE", "/cluster/firewall/rules/0", "digest", digest); r.Status != 500 || !strings.HasPrefix(r.Message, "detected modified configuration") {
		t.Errorf("delete with the old digest: got %d %q", r.Status, r.Message)
	}
	e.ok(nil, "PUT", "/cluster/firewall/rules/1", "comment", "ssh", "delete", "source")
	e.ok(nil, "DELETE", "/cluster/firewall/rules/0")
	_, short = fwRules(t, e, "/cluster/firewall/rules")
	if want := []string{"in ACCEPT proto=tcp dport=22 comment=ssh", "out DROP dest=gateway comment=no gw"}; strings.Join(short, "|") != strings.Join(want, "|") {
		t.Errorf("after update and delete: got %q", short)
	}
	groups := e.rows("/cluster/firewall/groups")
	if len(groups) != 1 || groups[0]["group"] != "web" || groups[0]["comment"] != "web servers" {
		t.Errorf("groups: got %v", groups)
	}
	grules := e.rows("/cluster/firewall/groups/web")
	if len(grules) != 1 || grules[0]["macro"] != "HTTP" {
		t.Errorf("group rules (macro by its preferred name): got %v", grules)
	}
	refs := e.rows("/cluster/firewall/refs")
	if len(refs) != 2 || refs[0]["ref"] != "+admins" || refs[1]["ref"] != "gateway" {
		t.Errorf("refs: got %v", refs)
	}
	macros := e.rows("/cluster/firewall/macros")
	if len(macros) < 80 {
		t.Errorf("macros: got %d", len(macros))
	}
}

// The digest is PVE's (copy_list_with_digest: SHA-1 over "key:value\n"
// of each entry, keys sorted): the value below is what Perl's
// Digest::SHA gives for this rule as pve-firewall reads it back
// (action, comment, enable, macro, source, type).
func TestFirewallDigestIsPVEs(t *testing.T) {
	e := startEnv(t, simtest.Options{Conformance: true})
	e.ok(nil, "POST", "/cluster/firewall/ipset", "name", "web")
	e.ok(nil, "POST", "/cluster/firewall/rules", "type", "in", "action", "ACCEPT", "macro", "ssh", "source", "+web", "enable", "1", "comment", "hi")
	list, _ := fwRules(t, e, "/cluster/firewall/rules")
	if got := list[0]["digest"]; got != "62920cb8cefc6e9f6b22351fef586fffcc1e74b6" {
		t.Errorf("digest: got %v", got)
	}
}
