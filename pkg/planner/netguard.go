package planner

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/pve/schema"
)

// What a node's commit checks right before it commits: the staged
// configuration must be what the plan saw plus what the plan staged, so
// that a commit never makes live an edit nobody reviewed.
//
// PVE's API shows only the staged view of each interface and a text diff
// against the running file. The rule: an interface this plan did not
// change must look now as it did when the plan read it (position, state
// flags aside); when the plan changed none on the node, the staged diff
// itself must be the one the plan showed.

// ours names the interfaces the plan's interface changes stage on the
// node: those of the plan at hand that do something (a --target leaves
// the others out).
func (st *netCommitState) ours(plan *engine.Plan) map[string]bool {
	out := map[string]bool{}
	if st == nil {
		return out
	}
	for addr, iface := range st.Ours {
		if plan == nil {
			out[iface] = true
			continue
		}
		if c := plan.Change(addr); c != nil && c.Action != engine.NoOp {
			out[iface] = true
		}
	}
	return out
}

// check refuses to commit what the plan did not see: staged changes by
// others that were not allowed, and edits made since the plan.
func (st *netCommitState) check(node string, ifaces []*pve.Config, changes string, ours map[string]bool, allow bool) error {
	if st == nil {
		return fmt.Errorf("node %s: the plan does not record the node's network as it found it: run plan again", node)
	}
	if st.Staged != "" && !allow {
		return fmt.Errorf("node %s has staged network changes that pvectl did not make: not committing them without --allow-foreign-network-changes", node)
	}
	if len(ours) == 0 {
		if stagedDiff(changes) != st.Staged {
			return fmt.Errorf("node %s: the staged network changes are not those the plan showed (someone edited them since): not committing; run plan again to review them", node)
		}
		return nil
	}
	if changed := st.changedOthers(ifaces, ours); len(changed) > 0 {
		return fmt.Errorf("node %s: interface(s) %s changed in the staged configuration since the plan, and this plan did not change them: not committing (this plan's changes stay staged); review them on the node, then run plan again",
			node, strings.Join(changed, ", "))
	}
	return nil
}

// changedOthers lists the interfaces, other than ours, whose staged view
// differs from the plan's. A slave of one of our bonds may have gained
// autostart: PVE's writer brings every bond slave up at boot.
func (st *netCommitState) changedOthers(ifaces []*pve.Config, ours map[string]bool) []string {
	seen, now := byIface(st.Seen), byIface(ifaces)
	slaves := map[string]bool{}
	for name := range ours {
		for _, cfg := range []*pve.Config{seen[name], now[name]} {
			for _, s := range schema.SplitList(cfg.Get("slaves")) {
				slaves[s] = true
			}
		}
	}
	names := slices.Sorted(maps.Keys(seen))
	for n := range now {
		if _, ok := seen[n]; !ok {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	var out []string
	for _, n := range names {
		a, b := seen[n], now[n]
		if ours[n] || ifaceDigest(a) == ifaceDigest(b) {
			continue
		}
		if slaves[n] && a != nil && b != nil && ifaceDigest(without(a, "autostart")) == ifaceDigest(without(b, "autostart")) {
			continue
		}
		out = append(out, n)
	}
	return out
}

func byIface(ifaces []*pve.Config) map[string]*pve.Config {
	out := make(map[string]*pve.Config, len(ifaces))
	for _, c := range ifaces {
		out[c.Get("iface")] = c
	}
	return out
}

// ifaceDigest fingerprints an interface's staged view ("" for none).
func ifaceDigest(cfg *pve.Config) string {
	if cfg == nil {
		return ""
	}
	return engine.FieldsDigest(cfg)
}

func without(cfg *pve.Config, key string) *pve.Config {
	out := cfg.Clone()
	out.Delete(key)
	return out
}
