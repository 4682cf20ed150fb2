package pvesim

import (
	"crypto/sha1"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// The firewall's configuration files (pve-firewall src/PVE/Firewall.pm):
// cluster.fw, nodes/<node>/host.fw, firewall/<vmid>.fw (and, for the SDN
// scope, sdn/firewall/<vnet>.fw). The state keeps each file's text, as
// pmxcfs does, and every call parses it anew (generic_fw_config_parser)
// and writes it back formatted ($format_rules, $format_options,
// $format_aliases, $format_ipsets): what a later call sees is what the
// file reads back as — names lowercased, /32 dropped, rules re-verified
// with their ipversion and errors.

// fwRule is one rule of a [RULES] or [group …] section.
type fwRule struct {
	Type, Action, Macro, Iface  string
	Proto, Dport, Sport         string
	Source, Dest, Log, ICMPType string
	Comment                     string
	Enable                      *int // nil: not defined (a rule being created)
	IPVersion                   int
	Errors                      map[string]string
}

// fwIPEntry is one entry of an [IPSET name] section.
type fwIPEntry struct {
	CIDR    string
	NoMatch bool
	Comment string
	Errors  map[string]string
}

// fwAlias is one line of [ALIASES]: its name as written, cidr, comment.
type fwAlias struct {
	Name, CIDR, Comment string
	IPVersion           int
}

// fwConf is a parsed firewall file. Which sections a scope has is
// fwEnvSections.
type fwConf struct {
	Options       map[string]string
	Aliases       map[string]*fwAlias // by lowercased name
	IPSets        map[string][]*fwIPEntry
	IPSetComments map[string]string
	Rules         []*fwRule
	Groups        map[string][]*fwRule
	GroupComments map[string]string
	// SDN are the IP sets SDN makes of its vnets and guests
	// (load_sdn_conf), which rules may name as "+sdn/…": not part of
	// the file, filled by fwLoadCluster.
	SDN map[string]string
}

func newFWConf() *fwConf {
	return &fwConf{Options: map[string]string{}, Aliases: map[string]*fwAlias{},
		IPSets: map[string][]*fwIPEntry{}, IPSetComments: map[string]string{},
		Groups: map[string][]*fwRule{}, GroupComments: map[string]string{}}
}

// fwEnvSections: the sections a scope's empty_conf has (load_clusterfw_conf,
// load_hostfw_conf, load_vmfw_conf, load_vnetfw_conf); the parser skips
// the others.
func fwEnvSections(env string) map[string]bool {
	switch env {
	case "cluster":
		return setOf("options", "aliases", "groups", "rules", "ipset")
	case "vm", "ct":
		return setOf("options", "aliases", "rules", "ipset")
	default: // host, vnet
		return setOf("options", "rules")
	}
}

// fwFileText is the stored text of a firewall file ("" when absent).
func (s *Server) fwFileText(file string) string { return s.st.Firewall[file] }

// fwSaveText writes a firewall file; an empty one is unlinked, as the
// save_*_conf functions do.
func (s *Server) fwSaveText(file, raw string) {
	if raw == "" {
		delete(s.st.Firewall, file)
		return
	}
	ensureMap(&s.st.Firewall)
	s.st.Firewall[file] = raw
}

// fwLoadCluster is load_clusterfw_conf.
func (s *Server) fwLoadCluster() *fwConf {
	c := newFWConf()
	c.SDN = s.sdnFirewallIPSets()
	parseFWConf(s.fwFileText("cluster.fw"), "cluster", c, c)
	return c
}

// fwLoad parses the file of a scope other than the cluster against the
// cluster's configuration (its aliases and IP sets are what the rules may
// name).
func (s *Server) fwLoad(file, env string, cluster *fwConf) *fwConf {
	c := newFWConf()
	parseFWConf(s.fwFileText(file), env, cluster, c)
	return c
}

// parseFWConf is generic_fw_config_parser: line by line, sections by
// their header, a line it cannot parse skipped (PVE warns to syslog).
func parseFWConf(raw, env string, cluster, res *fwConf) {
	has := fwEnvSections(env)
	section, group := "", ""
	seen := map[string]bool{}
	for _, line := range strings.Split(raw, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if sec, name, comment, ok := fwSectionHeader(line, has); ok {
			section, group = sec, name
			switch sec {
			case "groups":
				res.Groups[name] = []*fwRule{}
				if comment != "" {
					res.GroupComments[name] = comment
				}
			case "ipset":
				res.IPSets[name] = []*fwIPEntry{}
				seen = map[string]bool{}
				if comment != "" {
					res.IPSetComments[name] = comment
				}
			}
			continue
		}
		res.parseLine(section, group, line, env, cluster, seen)
	}
}

// parseLine reads one line of the current section.
func (res *fwConf) parseLine(section, group, line, env string, cluster *fwConf, seen map[string]bool) {
	switch section {
	case "options":
		if k, v, ok := parseFWOption(env, line); ok {
			res.Options[k] = v
		}
	case "aliases":
		if a, ok := parseFWAlias(line); ok {
			res.Aliases[strings.ToLower(a.Name)] = a
		}
	case "rules":
		fw := res
		if env == "cluster" {
			cluster = res
		}
		if r, ok := parseFWRule(line); ok {
			verifyFWRule(r, cluster, fw, env, true)
			res.Rules = append(res.Rules, r)
		}
	case "groups":
		if r, ok := parseFWRule(line); ok {
			verifyFWRule(r, cluster, nil, "group", true)
			res.Groups[group] = append(res.Groups[group], r)
		}
	case "ipset":
		e := parseFWIPEntry(line, cluster, res, seen)
		res.IPSets[group] = append(res.IPSets[group], e)
		seen[e.CIDR] = true
	}
}

// fwSectionHeader recognises [OPTIONS], [ALIASES], [RULES], [group NAME]
// and [IPSET NAME] (case-insensitive; group and IP set names lowercased,
// a bad or long one skipped with its section).
func fwSectionHeader(line string, has map[string]bool) (section, name, comment string, ok bool) {
	if !strings.HasPrefix(line, "[") {
		return "", "", "", false
	}
	for _, sec := range []string{"options", "aliases", "rules"} {
		if has[sec] && strings.EqualFold(line, "["+sec+"]") {
			return sec, "", "", true
		}
	}
	for sec, word := range map[string]string{"groups": "group", "ipset": "ipset"} {
		m := fwHeaderRE.FindStringSubmatch(line)
		if !has[sec] || m == nil || !strings.EqualFold(m[1], word) {
			continue
		}
		name, max := strings.ToLower(m[2]), fwMaxIPSetName
		if sec == "groups" {
			max = fwMaxGroupName
		}
		if len(name) > max || !fwNameRE.MatchString(name) {
			return "", "", "", true // PVE: warn, and no section until the next header
		}
		return sec, name, strings.TrimSpace(m[3]), true
	}
	return "", "", "", false
}

// parseFWOption is parse_clusterfw_option, parse_hostfw_option,
// parse_vmfw_option and parse_vnetfw_option: what each scope's file may
// hold; anything else is dropped on reading.
func parseFWOption(env, line string) (string, string, bool) {
	k, v, ok := strings.Cut(line, ":")
	if !ok {
		return "", "", false
	}
	k, v = strings.ToLower(strings.TrimSpace(k)), strings.TrimSpace(v)
	spec, known := fwOptionSpecs(env)[k]
	if !known {
		return "", "", false
	}
	_, val, ok := spec.read(v)
	return k, val, ok
}

// parseFWAlias is parse_alias: "name cidr # comment", the cidr without
// /32 or /128.
func parseFWAlias(line string) (*fwAlias, bool) {
	line, comment := cutComment(line)
	f := strings.Fields(line)
	if len(f) != 2 {
		return nil, false
	}
	cidr, ver, err := parseIPOrCIDR(f[1])
	if err != nil {
		return nil, false
	}
	return &fwAlias{Name: f[0], CIDR: cidr, IPVersion: ver, Comment: comment}, true
}

// parseFWIPEntry reads an IP set line: "[!]cidr # comment"; an unknown
// alias, a duplicate or a zero prefix is kept with its error.
func parseFWIPEntry(line string, cluster, res *fwConf, seen map[string]bool) *fwIPEntry {
	line, comment := cutComment(line)
	e := &fwIPEntry{Comment: comment}
	if strings.HasPrefix(line, "!") {
		e.NoMatch, line = true, strings.TrimSpace(line[1:])
	}
	e.CIDR = line
	errs := map[string]string{}
	if scope, name, ok := fwAliasRef(line); ok {
		if _, err := resolveFWAlias(cluster, res, name, scope); err != nil {
			errs["cidr"] = err.Error()
		}
	} else if c, _, err := parseIPOrCIDR(line); err != nil {
		errs["cidr"] = err.Error()
	} else {
		e.CIDR = c
	}
	if _, ok := errs["cidr"]; !ok && seen[e.CIDR] {
		errs["cidr"] = fmt.Sprintf("duplicate ipset entry for '%s'", e.CIDR)
	}
	if fwZeroPrefixRE.MatchString(e.CIDR) {
		errs["cidr"] = "a zero prefix is not allowed in ipset entries\n"
	}
	if len(errs) > 0 {
		e.Errors = errs
	}
	return e
}

// parseFWRule is parse_fw_rule's reading: "[|]TYPE ACTION|MACRO(ACTION)
// [-i IFACE] [-source …] … # comment".
func parseFWRule(line string) (*fwRule, bool) {
	line, comment := cutComment(line)
	r := &fwRule{Comment: comment}
	enable := 1
	if strings.HasPrefix(line, "|") {
		enable, line = 0, line[1:]
	}
	r.Enable = &enable
	f := strings.Fields(line)
	if len(f) < 2 {
		return nil, false
	}
	r.Type, r.Action = strings.ToLower(f[0]), f[1]
	if r.Type == "in" || r.Type == "out" || r.Type == "forward" {
		if m := fwMacroActionRE.FindStringSubmatch(r.Action); m != nil {
			r.Macro, r.Action = m[1], m[2]
		}
	}
	return r, r.parseFlags(f[2:])
}

// parseFlags reads the rule's "-flag value" pairs; a group rule takes only
// -i. Anything left over makes the line unreadable.
func (r *fwRule) parseFlags(f []string) bool {
	for len(f) >= 2 {
		flag := strings.TrimLeft(f[0], "-")
		if r.Type == "group" && f[0] != "-i" {
			return false
		}
		switch {
		case f[0] == "-i":
			r.Iface = f[1]
		case flag == "p" || flag == "proto":
			r.Proto = f[1]
		default:
			dst, isFlag := r.field(flag)
			if !isFlag {
				return false
			}
			*dst = f[1]
		}
		f = f[2:]
	}
	return len(f) == 0
}

// field is the rule's text field of parameter k (nil for none); isFlag
// says a rule line writes it as "-k value".
func (r *fwRule) field(k string) (p *string, isFlag bool) {
	switch k {
	case "type":
		return &r.Type, false
	case "action":
		return &r.Action, false
	case "macro":
		return &r.Macro, false
	case "iface":
		return &r.Iface, false
	case "proto":
		return &r.Proto, false
	case "comment":
		return &r.Comment, false
	case "dport":
		return &r.Dport, true
	case "sport":
		return &r.Sport, true
	case "source":
		return &r.Source, true
	case "dest":
		return &r.Dest, true
	case "log":
		return &r.Log, true
	case "icmp-type":
		return &r.ICMPType, true
	}
	return nil, false
}

// cutComment splits "text # comment" (the comment trimmed).
func cutComment(line string) (string, string) {
	text, comment, ok := strings.Cut(line, "#")
	if !ok {
		return strings.TrimSpace(line), ""
	}
	return strings.TrimSpace(text), strings.TrimSpace(comment)
}

// format is save_clusterfw_conf, save_hostfw_conf and save_vmfw_conf:
// options, aliases, IP sets, rules, then the groups; the sections a scope
// does not have are left out.
func (c *fwConf) format(env string) string {
	has := fwEnvSections(env)
	var b strings.Builder
	if len(c.Options) > 0 {
		b.WriteString("[OPTIONS]\n\n")
		for _, k := range slices.Sorted(maps.Keys(c.Options)) {
			fmt.Fprintf(&b, "%s: %s\n", k, c.Options[k])
		}
		b.WriteString("\n")
	}
	if has["aliases"] && len(c.Aliases) > 0 {
		b.WriteString("[ALIASES]\n\n")
		for _, k := range slices.Sorted(maps.Keys(c.Aliases)) {
			a := c.Aliases[k]
			b.WriteString(a.Name + " " + a.CIDR + commentSuffix(a.Comment) + "\n")
		}
		b.WriteString("\n")
	}
	if has["ipset"] {
		c.formatIPSets(&b)
	}
	if len(c.Rules) > 0 {
		b.WriteString("[RULES]\n\n")
		formatFWRules(&b, c.Rules, true) // save_vnetfw_conf too writes -i
		b.WriteString("\n")
	}
	if has["groups"] {
		for _, g := range slices.Sorted(maps.Keys(c.Groups)) {
			b.WriteString("[group " + g + "]" + commentSuffix(c.GroupComments[g]) + "\n\n")
			formatFWRules(&b, c.Groups[g], false)
			b.WriteString("\n")
		}
	}
	return b.String()
}

// formatIPSets writes each IP set, its entries sorted by cidr and a
// duplicate written once ($format_ipsets).
func (c *fwConf) formatIPSets(b *strings.Builder) {
	for _, name := range slices.Sorted(maps.Keys(c.IPSets)) {
		b.WriteString("[IPSET " + name + "]" + commentSuffix(c.IPSetComments[name]) + "\n\n")
		byCIDR := map[string]*fwIPEntry{}
		for _, e := range c.IPSets[name] {
			if _, dup := byCIDR[e.CIDR]; !dup {
				byCIDR[e.CIDR] = e
			}
		}
		for _, cidr := range slices.Sorted(maps.Keys(byCIDR)) {
			e := byCIDR[cidr]
			if e.NoMatch {
				b.WriteString("!")
			}
			b.WriteString(e.CIDR + commentSuffix(e.Comment) + "\n")
		}
		b.WriteString("\n")
	}
}

// formatFWRules is $format_rules; iface is written only where the scope
// allows it (not in groups).
func formatFWRules(b *strings.Builder, rules []*fwRule, allowIface bool) {
	for _, r := range rules {
		if r.Enable != nil && *r.Enable == 0 {
			b.WriteString("|")
		}
		b.WriteString(strings.ToUpper(r.Type))
		if r.Macro != "" {
			b.WriteString(" " + r.Macro + "(" + r.Action + ")")
		} else {
			b.WriteString(" " + r.Action)
		}
		if allowIface && r.Iface != "" {
			b.WriteString(" -i " + r.Iface)
		}
		if r.Type != "group" {
			for _, kv := range [][2]string{{"source", r.Source}, {"dest", r.Dest}, {"p", r.Proto},
				{"dport", r.Dport}, {"sport", r.Sport}, {"log", r.Log}, {"icmp-type", r.ICMPType}} {
				if kv[1] != "" {
					b.WriteString(" -" + kv[0] + " " + kv[1])
				}
			}
		}
		b.WriteString(commentSuffix(r.Comment) + "\n")
	}
}

// commentSuffix is how $format_rules, $format_aliases, $format_ipsets
// and save_clusterfw_conf write a comment: only a true one in Perl's
// sense, so neither a blank one nor "0" (its "if $comment").
func commentSuffix(c string) string {
	if strings.TrimSpace(c) == "" || c == "0" {
		return ""
	}
	return " # " + c
}

// fwDigest is the SHA-1 copy_list_with_digest and copy_opject_with_digest
// compute: each entry's defined scalar values, keys sorted, "k:v\n".
func fwDigest(entries []map[string]any) string {
	h := sha1.New()
	for _, e := range entries {
		for _, k := range slices.Sorted(maps.Keys(e)) {
			switch v := e[k].(type) {
			case string:
				fmt.Fprintf(h, "%s:%s\n", k, v)
			case int:
				fmt.Fprintf(h, "%s:%s\n", k, strconv.Itoa(v))
			}
		}
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}

// withDigest is copy_list_with_digest: every entry gets the list's digest.
func withDigest(entries []map[string]any) ([]map[string]any, string) {
	d := fwDigest(entries)
	for _, e := range entries {
		e["digest"] = d
	}
	return entries, d
}

// answer is the rule as the API shows it (its pos added by the caller).
func (r *fwRule) answer() map[string]any {
	out := map[string]any{"type": r.Type, "action": r.Action}
	for k, v := range map[string]string{"macro": r.Macro, "iface": r.Iface, "proto": r.Proto,
		"dport": r.Dport, "sport": r.Sport, "source": r.Source, "dest": r.Dest, "log": r.Log,
		"icmp-type": r.ICMPType, "comment": r.Comment} {
		if v != "" {
			out[k] = v
		}
	}
	if r.Enable != nil {
		out["enable"] = *r.Enable
	}
	if r.IPVersion != 0 {
		out["ipversion"] = r.IPVersion
	}
	if len(r.Errors) > 0 {
		out["errors"] = maps.Clone(r.Errors)
	}
	return out
}

// rulesAnswer is a rule list with positions and the list's digest.
func rulesAnswer(rules []*fwRule) ([]map[string]any, string) {
	out, d := withDigest(answers(rules))
	for i := range out {
		out[i]["pos"] = i
	}
	return out, d
}

func (e *fwIPEntry) answer() map[string]any {
	out := map[string]any{"cidr": e.CIDR}
	if e.NoMatch {
		out["nomatch"] = 1
	}
	if e.Comment != "" {
		out["comment"] = e.Comment
	}
	if len(e.Errors) > 0 {
		out["errors"] = maps.Clone(e.Errors)
	}
	return out
}

func ipsetAnswer(entries []*fwIPEntry) ([]map[string]any, string) {
	return withDigest(answers(entries))
}

// answers is each entry's answer, in order.
func answers[T interface{ answer() map[string]any }](entries []T) []map[string]any {
	out := make([]map[string]any, len(entries))
	for i, e := range entries {
		out[i] = e.answer()
	}
	return out
}

func (a *fwAlias) answer() map[string]any {
	out := map[string]any{"name": a.Name, "cidr": a.CIDR}
	if a.IPVersion != 0 {
		out["ipversion"] = a.IPVersion
	}
	if a.Comment != "" {
		out["comment"] = a.Comment
	}
	return out
}

// aliasesAnswer lists the aliases sorted by (lowercased) name.
func aliasesAnswer(aliases map[string]*fwAlias) ([]map[string]any, string) {
	var out []map[string]any
	for _, k := range slices.Sorted(maps.Keys(aliases)) {
		out = append(out, aliases[k].answer())
	}
	if out == nil {
		out = []map[string]any{}
	}
	return withDigest(out)
}
