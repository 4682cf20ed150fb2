package planner

import (
	"context"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/pvectl/pvectl/pkg/spec"
)

// A cluster Firewall whose IP sets or aliases a SecurityGroup's rules use
// is written in two parts (pkg/spec firewall_sets.go): its aliases and IP
// sets first; then, once the groups that depend on them are made, its
// rules (which name the groups), the removals and the options. PVE checks
// both references when a rule is written (pve-firewall
// src/PVE/Firewall.pm verify_rule: "no such ipset", and a group rule's
// "no such security group").

// groupsUseSets reports whether a security group of set (present, on
// fw's connection) uses an IP set or alias that fw declares: decided at
// plan time, kept in the change's state (and so in a saved plan).
func groupsUseSets(set *spec.Set, fw *spec.Resource) bool {
	if set == nil {
		return false
	}
	for _, o := range set.Resources {
		if o.Connection == fw.Connection && o.State == spec.Present && spec.GroupUsesFirewallSets(fw, o) {
			return true
		}
	}
	return false
}

// firewallWritesLate reports whether c's rules wait for its dependents.
func firewallWritesLate(c *engine.Change) bool {
	st, _ := c.State.(*fwState)
	return st != nil && st.RulesLate && (c.Action == engine.Create || c.Action == engine.Update)
}

func (firewallKind) WritesLate(c *engine.Change) bool { return firewallWritesLate(c) }

// WriteLate is the second part: the rules, removals and options, from the
// state the plan read (the first part wrote only aliases and IP sets,
// which the rule list's digest does not cover).
func (firewallKind) WriteLate(ctx context.Context, x *engine.Execution, c *engine.Change) error {
	w, st, err := fwWriteState(c)
	if err != nil || st == nil {
		return err
	}
	return writeFirewall(ctx, x, st, w)
}

// fwWriteState is what a write of c's firewall needs: its wire form and
// the state the plan read (nil when the plan read none: nothing there).
func fwWriteState(c *engine.Change) (*spec.FirewallWire, *fwState, error) {
	w, err := wireOf(c.Resource)
	if err != nil {
		return nil, nil, err
	}
	st, _ := c.State.(*fwState)
	if st == nil || st.Base == "" {
		return w, nil, nil
	}
	return w, st, nil
}
