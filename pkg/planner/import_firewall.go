package planner

import (
	"context"
	"maps"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"go.yaml.in/yaml/v3"

	"github.com/pvectl/pvectl/pkg/spec"
)

// The cluster's firewall is imported as one Firewall (scope: cluster)
// with its options, aliases, IP sets and rules; every security group as
// a SecurityGroup with its comment and rules. Node and guest firewalls
// are not imported yet (a guest's would need its QemuVM/LxcContainer
// document's name as scope).

func (firewallKind) Importable(_ context.Context, _ *engine.ImportCtx, node string) ([]engine.ImportItem, error) {
	if node != "" {
		return nil, nil // the cluster's firewall is on no node
	}
	r := &spec.Resource{Kind: spec.KindFirewall, Name: "cluster", State: spec.Present, Params: spec.NewParams(0),
		Keys: &spec.FirewallKeys{Scope: "cluster", Wire: &spec.FirewallWire{Scope: spec.FirewallCluster}}}
	return []engine.ImportItem{{R: r, Ids: []string{"cluster"}}}, nil
}

// ImportPerms: the cluster firewall's reads need Sys.Audit on /.
func (firewallKind) ImportPerms(string) []engine.PermNeed {
	return []engine.PermNeed{engine.NeedPriv("/", "to read the cluster's firewall", "Sys.Audit")}
}

func (firewallKind) ImportDoc(_ *engine.ImportCtx, _ *spec.Resource, lo *engine.LiveObj) (*engine.ImportedDoc, error) {
	st := fwStateOf(lo)
	if len(st.Options) == 0 && len(st.Rules.Rules) == 0 && len(st.Aliases) == 0 && len(st.IPSets) == 0 {
		return nil, nil // nothing set: no document
	}
	d := &engine.ImportedDoc{Kind: spec.KindFirewall, Name: "cluster", Spec: []engine.Field{{Key: "scope", Value: "cluster"}}}
	if len(st.Options) > 0 {
		d.Spec = append(d.Spec, engine.Field{Key: "options", Value: yamlOf(st.Options, false)})
	}
	if len(st.Aliases) > 0 {
		aliases := map[string]any{}
		for name, e := range st.Aliases {
			aliases[name] = entryValue(e)
		}
		d.Spec = append(d.Spec, engine.Field{Key: "aliases", Value: yamlOf(aliases, false)})
	}
	if len(st.IPSets) > 0 {
		sets := map[string]any{}
		for name, es := range st.IPSets {
			list := []any{}
			for _, e := range es {
				list = append(list, entryValue(e))
			}
			sets[name] = list
		}
		d.Spec = append(d.Spec, engine.Field{Key: "ipsets", Value: yamlOf(sets, false)})
	}
	if rules := importRules(st.Rules.Rules); len(rules) > 0 {
		d.Spec = append(d.Spec, engine.Field{Key: "rules", Value: yamlOf(rules, true)})
	}
	return d, nil
}

// yamlOf is v as a YAML node; flowItems writes a list's items on one
// line each ({type: in, action: ACCEPT, …}).
func yamlOf(v any, flowItems bool) *yaml.Node {
	n := &yaml.Node{}
	if err := n.Encode(v); err != nil {
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null"}
	}
	if flowItems {
		for _, item := range n.Content {
			item.Style = yaml.FlowStyle
		}
	}
	return n
}

// entryValue is an alias or IP set entry as a spec writes it: the CIDR
// alone, or a map when it has more.
func entryValue(e map[string]string) any {
	if len(e) == 1 {
		return e["cidr"]
	}
	return e
}

// importRules are rules as a spec writes them (enable only when 0, the
// spec's default being 1).
func importRules(rules []map[string]string) []any {
	out := []any{}
	for _, r := range rules {
		m := maps.Clone(r)
		if m["enable"] == "1" {
			delete(m, "enable")
		}
		out = append(out, m)
	}
	return out
}

// ImportLists: the security groups, read in the prefetch round.
func (securityGroupKind) ImportLists(lc *engine.LiveConn, _ string) []engine.ListRead {
	return []engine.ListRead{sectionListRead(lc, fwGroupsPath)}
}

func (securityGroupKind) Importable(ctx context.Context, ic *engine.ImportCtx, node string) ([]engine.ImportItem, error) {
	if node != "" {
		return nil, nil
	}
	rows, err := ic.Lc.SectionRows(ctx, fwGroupsPath) // observe reads it there too
	if err != nil {
		return nil, err
	}
	var out []engine.ImportItem
	for _, row := range rows {
		g := row.Get("group")
		r := &spec.Resource{Kind: spec.KindSecurityGroup, Name: g, State: spec.Present, Params: spec.ParamsOf(map[string]string{"group": g}),
			Keys: &spec.SecurityGroupKeys{Wire: &spec.FirewallWire{Scope: spec.FirewallGroup}}}
		out = append(out, engine.ImportItem{R: r, Ids: []string{g}})
	}
	return out, nil
}

// ImportPerms: a group's rules need Sys.Audit on /.
func (securityGroupKind) ImportPerms(string) []engine.PermNeed {
	return []engine.PermNeed{engine.NeedPriv("/", "to read the security groups' rules", "Sys.Audit")}
}

func (securityGroupKind) ImportDoc(_ *engine.ImportCtx, r *spec.Resource, lo *engine.LiveObj) (*engine.ImportedDoc, error) {
	st := sgStateOf(lo)
	d := &engine.ImportedDoc{Kind: spec.KindSecurityGroup, Name: groupName(r)}
	if st.Comment != "" {
		d.Spec = append(d.Spec, engine.Field{Key: "comment", Value: st.Comment})
	}
	if rules := importRules(st.Rules.Rules); len(rules) > 0 {
		d.Spec = append(d.Spec, engine.Field{Key: "rules", Value: yamlOf(rules, true)})
	}
	return d, nil
}
