package pvesim

import (
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The firewall API (pve-firewall src/PVE/API2/Firewall/*.pm): the
// cluster scope (Cluster.pm, Groups.pm, Rules.pm, IPSet.pm, Aliases.pm),
// the node scope (Host.pm) and the guest scope (VM.pm, registered by
// qemu-server and pve-container under …/{vmid}/firewall). A scope is a
// file (firewall_conf.go) and an env ("cluster", "host", "vm", "ct",
// "group", "vnet"); the rule, IP set and alias handlers take any scope, so
// the SDN vnet scope (Vnet.pm, sdn/firewall/<vnet>.fw) is one more
// fwScope and its routes.

// fwScope names the firewall a call works on.
type fwScope struct {
	env   string // verify_rule's rule_env
	file  string // the state's key: cluster.fw, nodes/N/host.fw, firewall/VMID.fw
	group string // the security group, for env "group"
}

// fileEnv is the env the file is parsed and written as.
func (sc fwScope) fileEnv() string {
	if sc.env == "group" {
		return "cluster"
	}
	return sc.env
}

func clusterScope(*request) fwScope { return fwScope{env: "cluster", file: "cluster.fw"} }

func groupScope(q *request) fwScope {
	return fwScope{env: "group", file: "cluster.fw", group: q.vars["group"]}
}

func hostScope(q *request) fwScope {
	return fwScope{env: "host", file: "nodes/" + q.vars["node"] + "/host.fw"}
}

func vmScope(q *request) fwScope { return fwScope{env: "vm", file: guestFWFile(q.vars["vmid"])} }
func ctScope(q *request) fwScope { return fwScope{env: "ct", file: guestFWFile(q.vars["vmid"])} }

// guestFWFile is a guest's firewall file, /etc/pve/firewall/<vmid>.fw
// (Firewall.pm load_vmfw_conf). PVE does not check that the guest exists
// (VM.pm): a call for any vmid reads or writes that file.
func guestFWFile(vmid string) string { return "firewall/" + vmid + ".fw" }

// fwLoadScope loads a scope as the API handlers do: the cluster's
// configuration and the scope's own; for the cluster and its groups the
// two are one (the handlers' load_config passes no cluster_conf then,
// which fwVerifyConfs reflects).
func (s *Server) fwLoadScope(sc fwScope) (cluster, conf *fwConf) {
	cluster = s.fwLoadCluster()
	if sc.file == "cluster.fw" {
		return cluster, cluster
	}
	return cluster, s.fwLoad(sc.file, sc.env, cluster)
}

// fwVerifyConfs are the (cluster_conf, fw_conf) verify_rule gets from an
// API handler: none and the cluster's for the cluster and its groups.
func fwVerifyConfs(sc fwScope, cluster, conf *fwConf) (*fwConf, *fwConf) {
	if sc.file == "cluster.fw" {
		return nil, conf
	}
	return cluster, conf
}

// fwSave writes the scope's file.
func (s *Server) fwSave(sc fwScope, conf *fwConf) error {
	s.fwSaveText(sc.file, conf.format(sc.fileEnv()))
	return s.saveLocked()
}

func (s *Server) firewallRoutes() []route {
	rs := []route{
		r("GET /cluster/firewall", fwIndex("aliases", "rules", "options", "groups", "ipset", "macros", "refs")),
		r("GET /cluster/firewall/options", s.fwGetOptions(clusterScope)),
		r("PUT /cluster/firewall/options", s.fwPutOptions(clusterScope)),
		r("GET /cluster/firewall/macros", s.fwMacroList),
		r("GET /cluster/firewall/refs", s.fwRefs(clusterScope)),
		r("GET /cluster/firewall/groups", s.fwGroupList),
		r("POST /cluster/firewall/groups", s.fwCreateGroup),
		r("DELETE /cluster/firewall/groups/{group}", s.fwDeleteGroup),
		r("GET /nodes/{node}/firewall", fwIndex("rules", "options", "log")),
		r("GET /nodes/{node}/firewall/options", s.fwGetOptions(hostScope)),
		r("PUT /nodes/{node}/firewall/options", s.fwPutOptions(hostScope)),
		r("GET /nodes/{node}/firewall/log", fwLog),
	}
	rs = append(rs, s.fwRuleRoutes("/cluster/firewall/rules", "/{pos}", clusterScope)...)
	rs = append(rs, s.fwRuleRoutes("/cluster/firewall/groups/{group}", "/{pos}", groupScope)...)
	rs = append(rs, s.fwRuleRoutes("/nodes/{node}/firewall/rules", "/{pos}", hostScope)...)
	rs = append(rs, s.fwSetRoutes("/cluster/firewall", clusterScope)...)
	rs = append(rs, s.vnetFirewallRoutes()...)
	for kind, scope := range map[string]func(*request) fwScope{"qemu": vmScope, "lxc": ctScope} {
		base := "/nodes/{node}/" + kind + "/{vmid}/firewall"
		rs = append(rs,
			r("GET "+base, fwIndex("rules", "aliases", "ipset", "refs", "options")),
			r("GET "+base+"/options", s.fwGetOptions(scope)),
			r("PUT "+base+"/options", s.fwPutOptions(scope)),
			r("GET "+base+"/refs", s.fwRefs(scope)),
			r("GET "+base+"/log", fwLog))
		rs = append(rs, s.fwRuleRoutes(base+"/rules", "/{pos}", scope)...)
		rs = append(rs, s.fwSetRoutes(base, scope)...)
	}
	return rs
}

// fwSetRoutes are a scope's IP set and alias routes.
func (s *Server) fwSetRoutes(base string, scope func(*request) fwScope) []route {
	return slices.Concat(
		[]route{
			r("GET "+base+"/ipset", s.fwIPSetList(scope)),
			r("POST "+base+"/ipset", s.fwCreateIPSet(scope)),
			r("DELETE "+base+"/ipset/{name}", s.fwIPSetDelete(scope)),
		},
		// A set's entries: listed and added at the set, one by its cidr.
		crudRoutes(base+"/ipset/{name}", "/{cidr}",
			s.fwIPSetGet(scope), s.fwIPSetAdd(scope), s.fwIPGet(scope), s.fwIPUpdate(scope), s.fwIPRemove(scope)),
		crudRoutes(base+"/aliases", "/{name}",
			s.fwAliasList(scope), s.fwAliasCreate(scope), s.fwAliasGet(scope), s.fwAliasUpdate(scope), s.fwAliasDelete(scope)),
	)
}

// fwIndex is a directory index: its children by name.
func fwIndex(names ...string) handler {
	return func(*request) (any, error) {
		out := make([]map[string]any, len(names))
		for i, n := range names {
			out[i] = map[string]any{"name": n}
		}
		return out, nil
	}
}

// fwLog is the firewall log (Helpers dump_fw_logfile of
// /var/log/pve-firewall.log): the simulator filters no packets, so it is
// empty.
func fwLog(*request) (any, error) {
	return withTop{data: []map[string]any{}, top: map[string]any{"total": 0}}, nil
}

func (s *Server) fwGetOptions(scope func(*request) fwScope) handler {
	return func(q *request) (any, error) {
		sc := scope(q)
		_, conf := s.fwLoadScope(sc)
		out, _ := fwOptionsAnswer(sc.env, conf.Options, time.Now())
		return out, nil
	}
}

func (s *Server) fwPutOptions(scope func(*request) fwScope) handler {
	return func(q *request) (any, error) {
		sc := scope(q)
		_, conf := s.fwLoadScope(sc)
		if err := s.setFWOptions(q, sc.env, conf.Options); err != nil {
			return nil, err
		}
		return nil, s.fwSave(sc, conf)
	}
}

// fwMacroList is get_macros: every macro with its description (PVE lists
// them in hash order; here by name).
func (s *Server) fwMacroList(*request) (any, error) {
	out := []map[string]any{}
	for _, name := range slices.Sorted(maps.Keys(fwMacros)) {
		// PVE's own wording is not copied: a description of ours, from
		// the macro's rules.
		d := fwMacroDescr(name, fwMacros[name])
		out = append(out, map[string]any{"macro": name, "descr": d})
	}
	return out, nil
}

// fwRefs is the refs handler: the IP sets and aliases a rule of the scope
// may name — the cluster's ("dc"), then the guest's ("guest"). SDN's IP
// sets ("sdn") join when the SDN area provides them.
func (s *Server) fwRefs(scope func(*request) fwScope) handler {
	return func(q *request) (any, error) {
		sc := scope(q)
		cluster, conf := s.fwLoadScope(sc)
		typ := q.get("type")
		sdn := collectFWRefs(&fwConf{IPSets: sdnIPSetMap(cluster.SDN), IPSetComments: cluster.SDN}, typ, "sdn")
		if conf == cluster { // Cluster.pm refs: SDN's, then the cluster's
			return append(sdn, collectFWRefs(cluster, typ, "dc")...), nil
		}
		out := append(collectFWRefs(cluster, typ, "dc"), sdn...) // VM.pm refs
		return append(out, collectFWRefs(conf, typ, "guest")...), nil
	}
}

// collectFWRefs is Firewall/Helpers.pm collect_refs.
func collectFWRefs(c *fwConf, typ, scope string) []map[string]any {
	out := []map[string]any{}
	if typ == "" || typ == "ipset" {
		for _, name := range slices.Sorted(maps.Keys(c.IPSets)) {
			row := map[string]any{"type": "ipset", "name": name, "ref": "+" + name, "scope": scope}
			if cm := c.IPSetComments[name]; cm != "" {
				row["comment"] = cm
			}
			out = append(out, row)
		}
	}
	if typ == "" || typ == "alias" {
		for _, name := range slices.Sorted(maps.Keys(c.Aliases)) {
			row := map[string]any{"type": "alias", "name": name, "ref": name, "scope": scope}
			if cm := c.Aliases[name].Comment; cm != "" {
				row["comment"] = cm
			}
			out = append(out, row)
		}
	}
	return out
}

// fwGroupList is list_security_groups: sorted, with the list's digest.
func (s *Server) fwGroupList(*request) (any, error) {
	out, _ := groupsAnswer(s.fwLoadCluster())
	return out, nil
}

func groupsAnswer(c *fwConf) ([]map[string]any, string) {
	out := []map[string]any{}
	for _, g := range slices.Sorted(maps.Keys(c.Groups)) {
		row := map[string]any{"group": g}
		if cm := c.GroupComments[g]; cm != "" {
			row["comment"] = cm
		}
		out = append(out, row)
	}
	return withDigest(out)
}

// fwCreateGroup is create_security_group: a new group (no digest check),
// or with rename a rename or comment update (digest checked); a rename
// rewrites every group rule naming the old group, in every node's and
// guest's file and the cluster's.
func (s *Server) fwCreateGroup(q *request) (any, error) {
	c := s.fwLoadCluster()
	group, rename := q.get("group"), q.get("rename")
	if rename == "" {
		if _, ok := c.Groups[group]; ok {
			return nil, paramErr1("group", "Security group '%s' already exists", group)
		}
		c.Groups[group] = []*fwRule{}
		if q.has("comment") {
			c.GroupComments[group] = q.get("comment")
		}
		return nil, s.fwSave(fwScope{env: "cluster", file: "cluster.fw"}, c)
	}
	_, digest := groupsAnswer(c)
	if err := assertIfModified(q, digest); err != nil {
		return nil, err
	}
	if _, ok := c.Groups[rename]; !ok {
		return nil, paramErr1("group", "Security group '%s' does not exist", rename)
	}
	if _, ok := c.Groups[group]; ok && group != rename {
		return nil, paramErr1("group", "Security group '%s' does already exist", group)
	}
	if q.has("comment") {
		c.GroupComments[rename] = q.get("comment")
	}
	if group != rename {
		s.fwRenameGroup(c, rename, group)
	}
	return nil, s.fwSave(fwScope{env: "cluster", file: "cluster.fw"}, c)
}

// fwRenameGroup moves a group to its new name and points the group rules
// at it ($rename_fw_rules): in every cluster node's host.fw, in the file
// of every guest of the cluster (get_vmlist: a file of a vmid without a
// guest is not looked at) and in the cluster's rules.
func (s *Server) fwRenameGroup(c *fwConf, from, to string) {
	c.Groups[to], c.GroupComments[to] = c.Groups[from], c.GroupComments[from]
	delete(c.Groups, from)
	delete(c.GroupComments, from)
	if c.GroupComments[to] == "" {
		delete(c.GroupComments, to)
	}
	var files, envs []string
	for _, n := range s.st.Nodes {
		files, envs = append(files, "nodes/"+n+"/host.fw"), append(envs, "host")
	}
	for _, id := range slices.Sorted(maps.Keys(s.st.VMs)) {
		env := "vm"
		if s.st.VMs[id].Type == "lxc" {
			env = "ct"
		}
		files, envs = append(files, guestFWFile(strconv.Itoa(id))), append(envs, env)
	}
	for i, file := range files {
		conf := s.fwLoad(file, envs[i], c)
		if renameGroupRules(conf.Rules, from, to) {
			s.fwSaveText(file, conf.format(envs[i]))
		}
	}
	renameGroupRules(c.Rules, from, to)
}

func renameGroupRules(rules []*fwRule, from, to string) bool {
	changed := false
	for _, r := range rules {
		if r.Type == "group" && r.Action == from {
			r.Action, changed = to, true
		}
	}
	return changed
}

// fwDeleteGroup is delete_security_group: only an empty group goes. PVE
// does not look for rules that name it (they stay, and the compiler
// warns "no such security group").
func (s *Server) fwDeleteGroup(q *request) (any, error) {
	c := s.fwLoadCluster()
	g := q.vars["group"]
	rules, ok := c.Groups[g]
	if !ok {
		return nil, fail(http.StatusInternalServerError, "no such security group '%s'", g)
	}
	if len(rules) > 0 {
		return nil, fail(http.StatusInternalServerError, "Security group '%s' is not empty", g)
	}
	delete(c.Groups, g)
	delete(c.GroupComments, g)
	return nil, s.fwSave(fwScope{env: "cluster", file: "cluster.fw"}, c)
}

// removeGuestFirewall is remove_vmfw_conf (pve-firewall
// src/PVE/Firewall/Helpers.pm), which qemu-server and pve-container call
// when a guest is destroyed (API2/Qemu.pm destroy_vm, API2/LXC.pm).
func (s *Server) removeGuestFirewall(vmid int) {
	delete(s.st.Firewall, guestFWFile(strconv.Itoa(vmid)))
}

// cloneGuestFirewall is clone_vmfw_conf: the clone gets a copy of the
// source's file (or none), as clone_vm writes its temporary config.
func (s *Server) cloneGuestFirewall(from, to int) {
	s.removeGuestFirewall(to)
	if raw := s.fwFileText(guestFWFile(strconv.Itoa(from))); raw != "" {
		s.fwSaveText(guestFWFile(strconv.Itoa(to)), raw)
	}
}

// sdnFirewallIPSets are the IP sets SDN provides to the firewall (PVE 9:
// pve-firewall load_sdn_conf, PVE::RS::Firewall::SDN::config — one per
// vnet subnet and guest), by name with their comment. The simulator's SDN
// area is not joined yet: none. When it is, this answers them (and the
// vnet scope, sdn/firewall/<vnet>.fw with env "vnet", is one fwScope and
// fwRuleRoutes/fwGetOptions/fwPutOptions away; Vnet.pm).
func (s *Server) sdnFirewallIPSets() map[string]string { return nil }

// sdnIPSetMap makes names into (empty) IP sets, for collectFWRefs.
func sdnIPSetMap(names map[string]string) map[string][]*fwIPEntry {
	out := map[string][]*fwIPEntry{}
	for n := range names {
		out[n] = nil
	}
	return out
}

// fwMacroDescr describes a macro by its rules ("SSH: tcp 22").
func fwMacroDescr(name string, m fwMacro) string {
	var parts []string
	for _, r := range m.rules {
		p := r.proto
		if r.dport != "" {
			p += " " + r.dport
		}
		if r.sport != "" {
			p += " from port " + r.sport
		}
		parts = append(parts, strings.TrimSpace(p))
	}
	if len(parts) == 0 {
		return name
	}
	return name + ": " + strings.Join(parts, ", ")
}
