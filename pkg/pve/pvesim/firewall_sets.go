package pvesim

import (
	"fmt"
	"maps"
	"net/http"
	"net/netip"
	"slices"
	"strings"
)

// IP sets and aliases of the cluster and guest scopes (pve-firewall
// src/PVE/API2/Firewall/IPSet.pm, Aliases.pm). The ipset {name} subclass
// is registered with an empty fragmentDelimiter, so an entry's path holds
// its cidr with the slash (router.go routePath).

// fwIPSetList is ipset_index: the sets sorted, with the list's digest.
func (s *Server) fwIPSetList(scope func(*request) fwScope) handler {
	return func(q *request) (any, error) {
		_, conf := s.fwLoadScope(scope(q))
		out := []map[string]any{}
		for _, name := range sortedKeys(conf.IPSets) {
			row := map[string]any{"name": name}
			if c := conf.IPSetComments[name]; c != "" {
				row["comment"] = c
			}
			out = append(out, row)
		}
		out, _ = withDigest(out)
		return out, nil
	}
}

// fwCreateIPSet is create_ipset: a new set (a name taken is refused,
// compared as given), or with rename a rename or comment update, digest
// checked.
func (s *Server) fwCreateIPSet(scope func(*request) fwScope) handler {
	return func(q *request) (any, error) {
		sc := scope(q)
		_, conf := s.fwLoadScope(sc)
		name, rename := q.get("name"), q.get("rename")
		if rename == "" {
			if _, ok := conf.IPSets[name]; ok {
				return nil, paramErr1("name", "IPSet '%s' already exists", name)
			}
			conf.IPSets[name] = []*fwIPEntry{}
			if q.has("comment") {
				conf.IPSetComments[name] = q.get("comment")
			}
			return nil, s.fwSave(sc, conf)
		}
		list, _ := s.fwIPSetList(scope)(q)
		if err := assertIfModified(q, listDigest(list)); err != nil {
			return nil, err
		}
		if _, ok := conf.IPSets[rename]; !ok {
			return nil, paramErr1("name", "IPSet '%s' does not exist", rename)
		}
		if _, ok := conf.IPSets[name]; ok && name != rename {
			return nil, paramErr1("name", "IPSet '%s' does already exist", name)
		}
		entries, comment := conf.IPSets[rename], conf.IPSetComments[rename]
		delete(conf.IPSets, rename)
		delete(conf.IPSetComments, rename)
		conf.IPSets[name] = entries
		if comment != "" {
			conf.IPSetComments[name] = comment
		}
		if q.has("comment") {
			conf.IPSetComments[name] = q.get("comment")
		}
		return nil, s.fwSave(sc, conf)
	}
}

func listDigest(list any) string {
	if rows, ok := list.([]map[string]any); ok && len(rows) > 0 {
		return rows[0]["digest"].(string)
	}
	return fwDigest(nil)
}

// fwIPSet loads a scope and one of its sets (IPSet load_config's die).
func (s *Server) fwIPSet(sc fwScope, name string) (cluster, conf *fwConf, set []*fwIPEntry, err error) {
	cluster, conf = s.fwLoadScope(sc)
	set, ok := conf.IPSets[name]
	if !ok {
		return nil, nil, nil, fail(http.StatusInternalServerError, "no such IPSet '%s'", name)
	}
	return cluster, conf, set, nil
}

// fwIPSetRows is the answer rows of a scope's set.
func (s *Server) fwIPSetRows(sc fwScope, name string) ([]map[string]any, error) {
	_, _, set, err := s.fwIPSet(sc, name)
	if err != nil {
		return nil, err
	}
	out, _ := ipsetAnswer(set)
	return out, nil
}

// fwIPSetAt loads a scope's set for a change of an entry: the call's
// digest must be the set's.
func (s *Server) fwIPSetAt(q *request, sc fwScope, name string) (conf *fwConf, set []*fwIPEntry, err error) {
	_, conf, set, err = s.fwIPSet(sc, name)
	if err != nil {
		return nil, nil, err
	}
	_, digest := ipsetAnswer(set)
	if err := assertIfModified(q, digest); err != nil {
		return nil, nil, err
	}
	return conf, set, nil
}

func (s *Server) fwIPSetGet(scope func(*request) fwScope) handler {
	return func(q *request) (any, error) {
		out, err := s.fwIPSetRows(scope(q), q.vars["name"])
		if err != nil {
			return nil, err
		}
		return out, nil
	}
}

// fwIPSetDelete is delete_ipset: a set with entries only with force. PVE
// does not look for rules naming it (they read back with an error).
func (s *Server) fwIPSetDelete(scope func(*request) fwScope) handler {
	return func(q *request) (any, error) {
		sc := scope(q)
		name := q.vars["name"]
		_, conf, set, err := s.fwIPSet(sc, name)
		if err != nil {
			return nil, err
		}
		if len(set) > 0 && !q.bool("force") {
			return nil, fail(http.StatusInternalServerError, "IPSet '%s' is not empty", name)
		}
		delete(conf.IPSets, name)
		return nil, s.fwSave(sc, conf)
	}
}

// checkIPOrCIDROrAlias is the IPorCIDRorAlias format
// (pve_verify_ip_or_cidr_or_alias): an alias name, else IPorCIDR.
func checkIPOrCIDROrAlias(v string) error {
	if _, _, ok := fwAliasRef(v); ok {
		return nil
	}
	return checkFWIPOrCIDR(v)
}

// fwCIDRParam is the parameter verification of an IP set entry's or an
// alias's cidr (the IPorCIDRorAlias or IPorCIDR format of IPSet.pm's and
// Aliases.pm's $api_properties): a 400 naming cidr. It holds for the
// {cidr} of read_ip, update_ip and remove_ip as for create_ip.
func fwCIDRParam(v string, check func(string) error) error {
	if err := check(v); err != nil {
		return paramErr1("cidr", "invalid format - %s", err.Error())
	}
	return nil
}

// checkFWIPOrCIDR is pve-firewall's IPorCIDR format
// (src/PVE/Firewall.pm pve_verify_ip_or_cidr): an IPv4 or IPv6 address
// (no zone) with an optional prefix that Net::IP takes once the host
// bits are cleared.
func checkFWIPOrCIDR(v string) error {
	addr, plen, hasLen := strings.Cut(v, "/")
	// $IPV4RE and $IPV6RE (pve-common ParseUtils.pm): a dotted quad
	// without leading zeros, an IPv6 address without a zone.
	if a, err := netip.ParseAddr(addr); err != nil || a.Zone() != "" {
		return fmt.Errorf("value does not look like a valid IP address or CIDR network")
	}
	if hasLen {
		if !fwPortRE.MatchString(plen) {
			return fmt.Errorf("value does not look like a valid IP address or CIDR network")
		}
		if _, err := netIPCheck(cleanCIDR(v)); err != nil {
			return err
		}
	}
	return nil
}

// fwIPSetAdd is create_ip: an alias must resolve, an address is cleaned
// (host bits cleared, /32 and /128 dropped); a duplicate or a zero
// prefix is refused; the entry goes first (the file sorts them).
func (s *Server) fwIPSetAdd(scope func(*request) fwScope) handler {
	return func(q *request) (any, error) {
		cidr := q.get("cidr")
		if err := fwCIDRParam(cidr, checkIPOrCIDROrAlias); err != nil {
			return nil, err
		}
		sc := scope(q)
		name := q.vars["name"]
		cluster, conf, set, err := s.fwIPSet(sc, name)
		if err != nil {
			return nil, err
		}
		if scopePfx, alias, ok := fwAliasRef(cidr); ok {
			if _, err := fwAliasConfs(sc, cluster, conf)(alias, scopePfx); err != nil {
				return nil, fail(http.StatusInternalServerError, "%s", err.Error())
			}
		} else {
			cidr, _, _ = parseIPOrCIDR(cleanCIDR(cidr))
		}
		for _, e := range set {
			if e.CIDR == cidr {
				return nil, paramErr1("cidr", "address '%s' already exists", cidr)
			}
		}
		if fwZeroPrefixRE.MatchString(cidr) {
			return nil, paramErr1("cidr", "a zero prefix is not allowed in ipset entries")
		}
		e := &fwIPEntry{CIDR: cidr, NoMatch: q.bool("nomatch"), Comment: q.get("comment")}
		conf.IPSets[name] = append([]*fwIPEntry{e}, set...)
		return nil, s.fwSave(sc, conf)
	}
}

// fwAliasConfs is how create_ip calls resolve_alias: the cluster's
// handler passes no cluster_conf, so its file is the cluster one.
func fwAliasConfs(sc fwScope, cluster, conf *fwConf) func(name, scope string) (*fwAlias, error) {
	return func(name, scope string) (*fwAlias, error) {
		if sc.file == "cluster.fw" {
			return resolveFWAlias(conf, nil, name, scope)
		}
		return resolveFWAlias(cluster, conf, name, scope)
	}
}

// fwIPGet is read_ip: the entry with the list's digest, found by its
// cidr as stored.
func (s *Server) fwIPGet(scope func(*request) fwScope) handler {
	return func(q *request) (any, error) {
		if err := fwCIDRParam(q.vars["cidr"], checkIPOrCIDROrAlias); err != nil {
			return nil, err
		}
		out, err := s.fwIPSetRows(scope(q), q.vars["name"])
		if err != nil {
			return nil, err
		}
		for _, e := range out {
			if e["cidr"] == q.vars["cidr"] {
				return e, nil
			}
		}
		return nil, paramErr1("cidr", "no such IP/Network")
	}
}

// fwIPUpdate is update_ip: nomatch and comment replaced by what is given
// (left out: removed).
func (s *Server) fwIPUpdate(scope func(*request) fwScope) handler {
	return func(q *request) (any, error) {
		if err := fwCIDRParam(q.vars["cidr"], checkIPOrCIDROrAlias); err != nil {
			return nil, err
		}
		sc := scope(q)
		conf, set, err := s.fwIPSetAt(q, sc, q.vars["name"])
		if err != nil {
			return nil, err
		}
		for _, e := range set {
			if e.CIDR == q.vars["cidr"] {
				e.NoMatch, e.Comment = q.bool("nomatch"), q.get("comment")
				return nil, s.fwSave(sc, conf)
			}
		}
		return nil, paramErr1("cidr", "no such IP/Network")
	}
}

// fwIPRemove is remove_ip: an entry that is not there is no error.
func (s *Server) fwIPRemove(scope func(*request) fwScope) handler {
	return func(q *request) (any, error) {
		if err := fwCIDRParam(q.vars["cidr"], checkIPOrCIDROrAlias); err != nil {
			return nil, err
		}
		sc := scope(q)
		name := q.vars["name"]
		conf, set, err := s.fwIPSetAt(q, sc, name)
		if err != nil {
			return nil, err
		}
		kept := []*fwIPEntry{}
		for _, e := range set {
			if e.CIDR != q.vars["cidr"] {
				kept = append(kept, e)
			}
		}
		conf.IPSets[name] = kept
		return nil, s.fwSave(sc, conf)
	}
}

func (s *Server) fwAliasList(scope func(*request) fwScope) handler {
	return func(q *request) (any, error) {
		_, conf := s.fwLoadScope(scope(q))
		out, _ := aliasesAnswer(conf.Aliases)
		return out, nil
	}
}

// fwAliasCreate is create_alias: names compare lowercased; the name is
// kept as given.
func (s *Server) fwAliasCreate(scope func(*request) fwScope) handler {
	return func(q *request) (any, error) {
		if err := fwCIDRParam(q.get("cidr"), checkFWIPOrCIDR); err != nil {
			return nil, err
		}
		sc := scope(q)
		_, conf := s.fwLoadScope(sc)
		name := q.get("name")
		key := strings.ToLower(name)
		if conf.Aliases[key] != nil {
			return nil, paramErr1("name", "alias '%s' already exists", name)
		}
		conf.Aliases[key] = &fwAlias{Name: name, CIDR: q.get("cidr"), Comment: q.get("comment")}
		return nil, s.fwSave(sc, conf)
	}
}

func (s *Server) fwAliasGet(scope func(*request) fwScope) handler {
	return func(q *request) (any, error) {
		_, conf := s.fwLoadScope(scope(q))
		a := conf.Aliases[strings.ToLower(q.vars["name"])]
		if a == nil {
			return nil, paramErr1("name", "no such alias")
		}
		return a.answer(), nil
	}
}

// fwAliasesAt loads a scope's aliases for a change: the call's digest
// must be theirs.
func (s *Server) fwAliasesAt(q *request, sc fwScope) (*fwConf, error) {
	_, conf := s.fwLoadScope(sc)
	_, digest := aliasesAnswer(conf.Aliases)
	if err := assertIfModified(q, digest); err != nil {
		return nil, err
	}
	return conf, nil
}

// fwAliasUpdate is update_alias: cidr and comment replaced, rename moves
// it (a name taken is refused); digest checked.
func (s *Server) fwAliasUpdate(scope func(*request) fwScope) handler {
	return func(q *request) (any, error) {
		if err := fwCIDRParam(q.get("cidr"), checkFWIPOrCIDR); err != nil {
			return nil, err
		}
		sc := scope(q)
		conf, err := s.fwAliasesAt(q, sc)
		if err != nil {
			return nil, err
		}
		key := strings.ToLower(q.vars["name"])
		if conf.Aliases[key] == nil {
			return nil, paramErr1("name", "no such alias")
		}
		a := &fwAlias{Name: q.vars["name"], CIDR: q.get("cidr"), Comment: q.get("comment")}
		conf.Aliases[key] = a
		if rename := strings.ToLower(q.get("rename")); rename != "" && rename != key {
			if conf.Aliases[rename] != nil {
				return nil, paramErr1("name", "alias '%s' already exists", q.get("rename"))
			}
			a.Name = q.get("rename")
			conf.Aliases[rename] = a
			delete(conf.Aliases, key)
		}
		return nil, s.fwSave(sc, conf)
	}
}

// fwAliasDelete is remove_alias: a missing alias is no error, and PVE
// does not look for rules or IP sets naming it.
func (s *Server) fwAliasDelete(scope func(*request) fwScope) handler {
	return func(q *request) (any, error) {
		sc := scope(q)
		conf, err := s.fwAliasesAt(q, sc)
		if err != nil {
			return nil, err
		}
		delete(conf.Aliases, strings.ToLower(q.vars["name"]))
		return nil, s.fwSave(sc, conf)
	}
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
