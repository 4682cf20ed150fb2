package planner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/pvectl/pvectl/pkg/planner/compare"
	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/spec"
)

// firewallKind manages Firewall: the whole firewall of one scope —
// options, ordered rules, aliases, IP sets — authoritatively (pve-firewall
// API2/Firewall/{Cluster,Host,VM,Rules,Aliases,IPSet}.pm). The scope
// always exists (a guest's once the guest does): an apply changes it, a
// destroy empties it (its rules, aliases and IP sets, and the options the
// spec set go back to PVE's defaults).
type firewallKind struct{}

// fwState is a scope's firewall as the plan read it; apply works from it
// and the spec, so a saved plan applies what it showed.
type fwState struct {
	Base          string                         `json:"base"` // the scope's API path, …/firewall
	Options       map[string]string              `json:"options,omitempty"`
	OptionsDigest string                         `json:"optionsDigest,omitempty"`
	Rules         fwRules                        `json:"rules"`
	Aliases       map[string]map[string]string   `json:"aliases,omitempty"`
	IPSets        map[string][]map[string]string `json:"ipsets,omitempty"`
	// Lockout says why applying would cut pvectl's own access ("" when
	// it would not): apply refuses unless --allow-lockout.
	Lockout string `json:"lockout,omitempty"`
	// Client is the address pvectl reaches PVE from (lockout.go).
	Client string `json:"client,omitempty"`
	// RulesLate: the rules, removals and options wait for the security
	// groups that use this scope's sets (firewall_late.go).
	RulesLate bool `json:"rulesLate,omitempty"`
}

// fwBase is a scope's API path; "" while its guest's vmid or node is not
// known yet.
func fwBase(w *spec.FirewallWire, r *spec.Resource) string {
	switch w.Scope {
	case spec.FirewallCluster:
		return "/cluster/firewall"
	case spec.FirewallNode:
		return "/nodes/" + url.PathEscape(w.Node) + "/firewall"
	case spec.FirewallVnet:
		return "/cluster/sdn/vnets/" + url.PathEscape(w.Vnet) + "/firewall"
	}
	vmid, node := r.Params.Get("vmid"), r.Params.Get("node")
	if vmid == "" || node == "" || spec.HasOutputRef(vmid) || spec.HasOutputRef(node) {
		return ""
	}
	return "/nodes/" + url.PathEscape(node) + "/" + w.Scope + "/" + vmid + "/firewall"
}

func wireOf(r *spec.Resource) (*spec.FirewallWire, error) {
	w := spec.FirewallWireOf(r)
	if w == nil {
		return nil, fmt.Errorf("%s: no checked firewall (the spec was not loaded)", r.Address())
	}
	return w, nil
}

func (firewallKind) Observe(ctx context.Context, lc *engine.LiveConn, r *spec.Resource) (*engine.LiveObj, error) {
	w, err := wireOf(r)
	if err != nil {
		return nil, err
	}
	if w.Scope == spec.FirewallNode && !lc.HasNode(w.Node) {
		return nil, fmt.Errorf("node %q is not in the cluster", w.Node)
	}
	if (w.Scope == spec.FirewallQemu || w.Scope == spec.FirewallLxc) && r.Params.Get("node") == "" {
		// The guest's node follows from its vmid when the vmid is known.
		if vmid, err := strconv.Atoi(r.Params.Get("vmid")); err == nil {
			for _, res := range lc.Resources {
				if res.VMID == vmid && res.Type == w.Scope {
					r.Params.Set("node", res.Node)
				}
			}
		}
	}
	base := fwBase(w, r)
	if base == "" {
		return &engine.LiveObj{}, nil // the guest is made by this apply
	}
	if w.Scope == spec.FirewallVnet {
		// PVE serves a vnet's firewall once the vnet is committed
		// (pve-firewall Helpers.pm check_vnet_access reads the running
		// config): before, it has none, and the SDN commit comes first.
		if committed, err := vnetCommitted(ctx, lc, w.Vnet); err != nil || !committed {
			return &engine.LiveObj{}, err
		}
	}
	// Each scope is its own four lists: read with the other objects'
	// deferred reads, several at a time (loadAll), not one after another.
	lo := &engine.LiveObj{Exists: true, Node: w.Node, Config: pve.NewConfig(0)}
	lo.Load = func(ctx context.Context) error {
		st, err := readFirewall(ctx, lc.Client, w, base)
		if err != nil {
			if isNotFound(err) && w.Guest != "" {
				lo.Exists, lo.Node = false, ""
				return nil
			}
			return err
		}
		st.Client = clientAddr(lc.Client.BaseURL())
		lo.Digest, lo.State = st.Rules.Digest+st.OptionsDigest, st
		return nil
	}
	return lo, nil
}

// readFirewall reads a scope's options, rules, aliases and IP sets.
func readFirewall(ctx context.Context, cl *pve.Client, w *spec.FirewallWire, base string) (*fwState, error) {
	st := &fwState{Base: base, Options: map[string]string{}}
	var opts *pve.Config
	if err := cl.Do(ctx, http.MethodGet, base+"/options", nil, &opts); err != nil {
		return nil, fmt.Errorf("read firewall options %s: %w", base, err)
	}
	st.OptionsDigest = opts.Get("digest")
	opts.Delete("digest")
	st.Options = opts.Map()
	rules, err := readRules(ctx, cl, base+"/rules")
	if err != nil {
		return nil, err
	}
	st.Rules = rules
	if w.Scope == spec.FirewallNode || w.Scope == spec.FirewallVnet {
		return st, nil // a node or vnet has no aliases or IP sets
	}
	if st.Aliases, err = readAliases(ctx, cl, base); err != nil {
		return nil, err
	}
	if st.IPSets, err = readIPSets(ctx, cl, base); err != nil {
		return nil, err
	}
	return st, nil
}

func readAliases(ctx context.Context, cl *pve.Client, base string) (map[string]map[string]string, error) {
	var rows []*pve.Config
	if err := cl.Do(ctx, http.MethodGet, base+"/aliases", nil, &rows); err != nil {
		return nil, fmt.Errorf("read firewall aliases %s: %w", base, err)
	}
	out := map[string]map[string]string{}
	for _, row := range rows {
		e := map[string]string{"cidr": row.Get("cidr")}
		if c := row.Get("comment"); c != "" {
			e["comment"] = c
		}
		out[row.Get("name")] = e
	}
	return out, nil
}

func readIPSets(ctx context.Context, cl *pve.Client, base string) (map[string][]map[string]string, error) {
	var sets []*pve.Config
	if err := cl.Do(ctx, http.MethodGet, base+"/ipset", nil, &sets); err != nil {
		return nil, fmt.Errorf("read firewall IP sets %s: %w", base, err)
	}
	out := map[string][]map[string]string{}
	for _, s := range sets {
		entries, err := readIPSet(ctx, cl, base, s.Get("name"))
		if err != nil {
			return nil, err
		}
		out[s.Get("name")] = entries
	}
	return out, nil
}

func readIPSet(ctx context.Context, cl *pve.Client, base, name string) ([]map[string]string, error) {
	var rows []*pve.Config
	if err := cl.Do(ctx, http.MethodGet, base+"/ipset/"+url.PathEscape(name), nil, &rows); err != nil {
		return nil, fmt.Errorf("read firewall IP set %s of %s: %w", name, base, err)
	}
	out := []map[string]string{}
	for _, row := range rows {
		e := map[string]string{"cidr": row.Get("cidr")}
		if row.Get("nomatch") == "1" {
			e["nomatch"] = "1"
		}
		if c := row.Get("comment"); c != "" {
			e["comment"] = c
		}
		out = append(out, e)
	}
	return out, nil
}

func isNotFound(err error) bool {
	var ae *pve.APIError
	return errors.As(err, &ae) && (ae.Status == http.StatusNotFound || strings.Contains(ae.Message, "does not exist"))
}

func fwStateOf(lo *engine.LiveObj) *fwState {
	if lo != nil {
		if st, ok := lo.State.(*fwState); ok {
			return st
		}
	}
	return &fwState{Options: map[string]string{}, Rules: fwRules{Rules: []map[string]string{}}}
}

func (firewallKind) NewState(lo *engine.LiveObj) any { return fwStateOf(lo) }

func (firewallKind) DecodeState(raw json.RawMessage) (any, error) {
	st := &fwState{}
	return st, json.Unmarshal(raw, st)
}

// fwDiffs are the differences between a scope's firewall and the spec.
func fwDiffs(st *fwState, w *spec.FirewallWire) []engine.FieldDiff {
	var out []engine.FieldDiff
	for _, k := range slices.Sorted(maps.Keys(w.Options)) {
		if lv, dv := st.Options[k], w.Options[k]; lv != dv {
			out = append(out, compare.Diff("options."+k, compare.NilIfEmpty(lv), dv))
		}
	}
	out = append(out, entryDiffs("aliases", st.Aliases, w.Aliases)...)
	for _, name := range unionKeys(st.IPSets, w.IPSets) {
		lv, lok := st.IPSets[name]
		dv, dok := w.IPSets[name]
		before, after := any(nil), any(nil)
		if lok {
			before = ipsetLine(lv)
		}
		if dok {
			after = ipsetLine(dv)
		}
		if before != after {
			out = append(out, compare.Diff("ipsets."+name, before, after))
		}
	}
	return append(out, ruleDiffs("rules", st.Rules.Rules, w.Rules)...)
}

func entryDiffs(path string, live, want map[string]map[string]string) []engine.FieldDiff {
	var out []engine.FieldDiff
	for _, name := range unionKeys(live, want) {
		lv, lok := live[name]
		dv, dok := want[name]
		before, after := any(nil), any(nil)
		if lok {
			before = entryLine(lv)
		}
		if dok {
			after = entryLine(dv)
		}
		if before != after {
			out = append(out, compare.Diff(path+"."+name, before, after))
		}
	}
	return out
}

func unionKeys[V any](a, b map[string]V) []string {
	keys := map[string]bool{}
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	return slices.Sorted(maps.Keys(keys))
}

// entryLine is an alias or IP set entry as the plan shows it.
func entryLine(e map[string]string) string {
	s := e["cidr"]
	if e["nomatch"] == "1" {
		s = "!" + s
	}
	if c := e["comment"]; c != "" {
		s += " # " + c
	}
	return s
}

func ipsetLine(es []map[string]string) string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = entryLine(e)
	}
	slices.Sort(lines)
	return "[" + strings.Join(lines, ", ") + "]"
}

func (firewallKind) Compare(b *engine.Builder, r *spec.Resource, lo *engine.LiveObj, c *engine.Change) error {
	w, err := wireOf(r)
	if err != nil {
		return err
	}
	st := fwStateOf(lo)
	c.Diff = fwDiffs(st, w)
	st.Lockout = lockoutRisk(st, w)
	st.RulesLate = groupsUseSets(b.Set, r)
	c.State = st
	if !engine.UpdateForDiff(c) {
		return nil
	}
	if st.Lockout != "" {
		c.Reasons = append(c.Reasons, "lockout: "+st.Lockout)
	}
	return nil
}

func (k firewallKind) Create(ctx context.Context, x *engine.Execution, c *engine.Change) error {
	return k.Update(ctx, x, c)
}

// Update writes in the order that keeps the scope usable: aliases and IP
// sets the rules name first, then the rules (firewall_order.go), then
// what the rules no longer name goes, and the options last (so a firewall
// is enabled, or its policy tightened, only once its rules are in place).
func (firewallKind) Update(ctx context.Context, x *engine.Execution, c *engine.Change) error {
	w, err := wireOf(c.Resource)
	if err != nil {
		return err
	}
	st, _ := c.State.(*fwState)
	if st == nil || st.Base == "" {
		// A guest made by this apply: its firewall is empty (a new
		// guest's has no file yet).
		base := fwBase(w, c.Resource)
		if base == "" {
			return fmt.Errorf("%s: the guest's vmid and node are not known", c.Address)
		}
		if st, err = readFirewall(ctx, x.Client, w, base); err != nil {
			return err
		}
	}
	if err := writeSets(ctx, x, st, w); err != nil || firewallWritesLate(c) {
		return err
	}
	return writeFirewall(ctx, x, st, w)
}

// writeSets creates and changes the aliases and IP sets the rules use.
func writeSets(ctx context.Context, x *engine.Execution, st *fwState, w *spec.FirewallWire) error {
	if err := writeAliases(ctx, x, st, w, false); err != nil {
		return err
	}
	return writeIPSets(ctx, x, st, w, false)
}

// writeFirewall writes the rules, removes what they no longer name and
// sets the options (the aliases and IP sets are written already).
func writeFirewall(ctx context.Context, x *engine.Execution, st *fwState, w *spec.FirewallWire) error {
	if err := applyRules(ctx, x, st.Base+"/rules", st.Rules, w.Rules); err != nil {
		return err
	}
	if err := writeIPSets(ctx, x, st, w, true); err != nil {
		return err
	}
	if err := writeAliases(ctx, x, st, w, true); err != nil {
		return err
	}
	return writeOptions(ctx, x, st, w.Options, nil)
}

// writeOptions sets the options that differ (and deletes del), with the
// digest the plan read.
func writeOptions(ctx context.Context, x *engine.Execution, st *fwState, want map[string]string, del []string) error {
	params := url.Values{}
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if st.Options[k] != want[k] {
			params.Set(k, want[k])
		}
	}
	if len(del) > 0 {
		params.Set("delete", strings.Join(del, ","))
	}
	if len(params) == 0 {
		return nil
	}
	if st.OptionsDigest != "" {
		params.Set("digest", st.OptionsDigest)
	}
	put := func() error { return x.Client.Do(ctx, http.MethodPut, st.Base+"/options", params, nil) }
	if err := unsureStep(ctx, x, true, put, lookOptions(x, st.Base, params, st.Options)); err != nil {
		return fmt.Errorf("write firewall options %s: %w", st.Base, err)
	}
	return nil
}

// writeAliases creates and changes aliases (gone=false) or removes those
// the spec does not list (gone=true); each write carries the digest of
// the list as it is read right before.
func writeAliases(ctx context.Context, x *engine.Execution, st *fwState, w *spec.FirewallWire, gone bool) error {
	if w.Scope == spec.FirewallNode || w.Scope == spec.FirewallVnet {
		return nil
	}
	base := st.Base + "/aliases"
	for _, name := range unionKeys(st.Aliases, w.Aliases) {
		lv, lok := st.Aliases[name]
		dv, dok := w.Aliases[name]
		var method, path string
		params := url.Values{}
		switch {
		case gone && lok && !dok:
			method, path = http.MethodDelete, base+"/"+url.PathEscape(name)
		case !gone && !lok && dok:
			method, path = http.MethodPost, base
			params.Set("name", name)
			params.Set("cidr", dv["cidr"])
			setIf(params, "comment", dv["comment"])
		case !gone && lok && dok && entryLine(lv) != entryLine(dv):
			method, path = http.MethodPut, base+"/"+url.PathEscape(name)
			params.Set("cidr", dv["cidr"])
			params.Set("comment", dv["comment"])
		default:
			continue
		}
		send := func() error { return sendWithDigest(ctx, x, base, method, path, params) }
		if err := unsureStep(ctx, x, true, send, lookAlias(x, st.Base, name, dv, dok && !gone, lv, lok)); err != nil {
			return fmt.Errorf("alias %s of %s: %w", name, st.Base, err)
		}
	}
	return nil
}

// writeIPSets creates sets and their entries (gone=false), or removes
// entries and sets the spec does not list (gone=true).
func writeIPSets(ctx context.Context, x *engine.Execution, st *fwState, w *spec.FirewallWire, gone bool) error {
	if w.Scope == spec.FirewallNode || w.Scope == spec.FirewallVnet {
		return nil
	}
	for _, name := range unionKeys(st.IPSets, w.IPSets) {
		lv, lok := st.IPSets[name]
		dv, dok := w.IPSets[name]
		set := st.Base + "/ipset/" + url.PathEscape(name)
		if !gone && !lok && dok {
			send := func() error {
				return sendWithDigest(ctx, x, st.Base+"/ipset", http.MethodPost, st.Base+"/ipset", url.Values{"name": {name}})
			}
			if err := unsureStep(ctx, x, true, send, lookIPSet(x, st.Base, name, true)); err != nil {
				return fmt.Errorf("create IP set %s of %s: %w", name, st.Base, err)
			}
		}
		if err := writeIPSetEntries(ctx, x, set, lv, dv, gone); err != nil {
			return fmt.Errorf("IP set %s of %s: %w", name, st.Base, err)
		}
		if gone && lok && !dok {
			// DELETE …/ipset/{name} takes no digest; without force PVE
			// refuses a set that is not empty, so one filled meanwhile stays.
			del := func() error { return x.Client.Do(ctx, http.MethodDelete, set, nil, nil) }
			if err := unsureStep(ctx, x, true, del, lookIPSet(x, st.Base, name, false)); err != nil {
				return fmt.Errorf("delete IP set %s of %s: %w", name, st.Base, err)
			}
		}
	}
	return nil
}

func writeIPSetEntries(ctx context.Context, x *engine.Execution, set string, live, want []map[string]string, gone bool) error {
	byCIDR := func(es []map[string]string) map[string]map[string]string {
		out := map[string]map[string]string{}
		for _, e := range es {
			out[e["cidr"]] = e
		}
		return out
	}
	lm, dm := byCIDR(live), byCIDR(want)
	for _, cidr := range unionKeys(lm, dm) {
		lv, lok := lm[cidr]
		dv, dok := dm[cidr]
		// The entry's path takes the CIDR's "/" as it is: PVE registers
		// {cidr} without a fragment delimiter (IPSet.pm).
		entry := set + "/" + cidr
		var method, path string
		params := url.Values{}
		switch {
		case gone && lok && !dok:
			method, path = http.MethodDelete, entry
		case !gone && !lok && dok:
			method, path = http.MethodPost, set
			params.Set("cidr", cidr)
			setIf(params, "nomatch", dv["nomatch"])
			setIf(params, "comment", dv["comment"])
		case !gone && lok && dok && entryLine(lv) != entryLine(dv):
			method, path = http.MethodPut, entry
			params.Set("nomatch", or(dv["nomatch"], "0"))
			params.Set("comment", dv["comment"])
		default:
			continue
		}
		send := func() error { return sendWithDigest(ctx, x, set, method, path, params) }
		if err := unsureStep(ctx, x, true, send, lookEntry(x, set, cidr, dv, dok && !gone, lv, lok)); err != nil {
			return fmt.Errorf("entry %s: %w", cidr, err)
		}
	}
	return nil
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func setIf(v url.Values, k, s string) {
	if s != "" {
		v.Set(k, s)
	}
}

// sendWithDigest reads the list at list for its digest and sends the
// write with it (PVE checks it on the PUTs and DELETEs of entries; its
// POSTs take none).
func sendWithDigest(ctx context.Context, x *engine.Execution, list, method, path string, params url.Values) error {
	var rows []*pve.Config
	if err := x.Client.Do(ctx, http.MethodGet, list, nil, &rows); err != nil {
		return err
	}
	if len(rows) > 0 && rows[0].Get("digest") != "" && method != http.MethodPost {
		params.Set("digest", rows[0].Get("digest"))
	}
	return x.Client.Do(ctx, method, path, params, nil)
}

// Remove empties the scope: every rule, alias and IP set goes, and the
// options the spec set are deleted (PVE's defaults again; the firewall
// of the scope is off unless enable has a default of its own).
func (firewallKind) Remove(ctx context.Context, x *engine.Execution, c *engine.Change) error {
	w, st, err := fwWriteState(c)
	if err != nil || st == nil {
		return err
	}
	empty := &spec.FirewallWire{Scope: w.Scope}
	if err := applyRules(ctx, x, st.Base+"/rules", st.Rules, nil); err != nil {
		return err
	}
	if err := writeIPSets(ctx, x, st, empty, true); err != nil {
		return err
	}
	if err := writeAliases(ctx, x, st, empty, true); err != nil {
		return err
	}
	var del []string
	for _, k := range slices.Sorted(maps.Keys(w.Options)) {
		if st.Options[k] != "" {
			del = append(del, k)
		}
	}
	return writeOptions(ctx, x, st, nil, del)
}

func (firewallKind) Current(ctx context.Context, cl *pve.Client, c *engine.Change) (*engine.LiveObj, error) {
	w, err := wireOf(c.Resource)
	if err != nil {
		return nil, err
	}
	base := fwBase(w, c.Resource)
	if base == "" {
		return &engine.LiveObj{}, nil
	}
	if w.Scope == spec.FirewallVnet {
		lc := &engine.LiveConn{Client: cl}
		if committed, err := vnetCommitted(ctx, lc, w.Vnet); err != nil || !committed {
			return &engine.LiveObj{}, err
		}
	}
	st, err := readFirewall(ctx, cl, w, base)
	if err != nil {
		return nil, err
	}
	return &engine.LiveObj{Exists: true, Node: w.Node, Config: pve.NewConfig(0), Digest: st.Rules.Digest + st.OptionsDigest, State: st}, nil
}

// objectName: "the cluster's firewall", "node pve's firewall".
func (firewallKind) objectName(c *engine.Change) string {
	if keys, ok := c.Resource.Keys.(*spec.FirewallKeys); ok {
		return "firewall of " + keys.Scope
	}
	return "firewall"
}

// Traits: one scope's firewall (cluster, node or guest: the spec says),
// named in messages by its scope.
func (k firewallKind) Traits() engine.KindTraits {
	return engine.KindTraits{Scope: engine.ScopeCluster, Name: k.objectName}
}

// Traits: a cluster security group.
func (securityGroupKind) Traits() engine.KindTraits {
	return engine.KindTraits{Scope: engine.ScopeCluster}
}
