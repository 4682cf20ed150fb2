package planner

import (
	"context"

	"github.com/pvectl/pvectl/pkg/spec"
)

// A cluster Firewall whose IP sets or aliases a SecurityGroup's rules use
// is written in two parts (pkg/spec firewall_sets.go): its aliases and IP
// sets first; then, once the groups that depend on them are made, its
// rules (which name the groups), the removals and the options. PVE checks
// both references when a rule is written (pve-firewall
// src/PVE/Firewall.pm verify_rule: "no such ipset", and a group rule's
// "no such security group").

// firewallWritesLate reports whether c's rules wait for its dependents:
// a create or update of the cluster's firewall that a SecurityGroup of the
// plan depends on.
func firewallWritesLate(c *Change, p *Plan) bool {
	if p == nil || c.Resource == nil || (c.Action != Create && c.Action != Update) {
		return false
	}
	for _, o := range p.Changes {
		if o.Resource != nil && spec.GroupUsesFirewallSets(c.Resource, o.Resource) {
			return true
		}
	}
	return false
}

func (firewallKind) writesLate(c *Change, p *Plan) bool { return firewallWritesLate(c, p) }

// writeLate is the second part: the rules, removals and options, from the
// state the plan read (the first part wrote only aliases and IP sets,
// which the rule list's digest does not cover).
func (firewallKind) writeLate(ctx context.Context, x *execution, c *Change) error {
	w, err := wireOf(c.Resource)
	if err != nil {
		return err
	}
	st, _ := c.State.(*fwState)
	if st == nil || st.Base == "" {
		return nil
	}
	return writeFirewall(ctx, x, st, w)
}

// heldMessage says what a change whose late part was left out did not do.
func heldMessage(c *Change) string {
	if c != nil && c.Resource != nil {
		if _, ok := kinds[c.Resource.Kind].(lateWriter); ok {
			return "left its rules and options unwritten (they wait for its dependents): "
		}
	}
	return "kept what it removes after its dependents: "
}
