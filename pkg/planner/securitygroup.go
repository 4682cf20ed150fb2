package planner

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/pvectl/pvectl/pkg/planner/compare"
	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/spec"
)

// securityGroupKind manages SecurityGroup: a cluster security group and
// its ordered rules (pve-firewall API2/Firewall/Groups.pm and Rules.pm
// GroupRules). POST /cluster/firewall/groups creates it, and with
// rename=<itself> changes its comment; its rules are a rule list like a
// scope's (firewall_rules.go); DELETE refuses a group with rules, so a
// removal empties it first.
type securityGroupKind struct{}

const fwGroupsPath = "/cluster/firewall/groups"

// sgState is a group as the plan read it.
type sgState struct {
	Comment string  `json:"comment,omitempty"`
	Digest  string  `json:"digest,omitempty"` // the group list's
	Rules   fwRules `json:"rules"`
}

func groupName(r *spec.Resource) string {
	if g := r.Params.Get("group"); g != "" {
		return g
	}
	return r.Name
}

func groupPath(name string) string { return fwGroupsPath + "/" + url.PathEscape(name) }

func readGroup(ctx context.Context, cl *pve.Client, name string) (*engine.LiveObj, error) {
	rows, err := engine.ReadSection(ctx, cl, fwGroupsPath)
	if err != nil {
		return nil, err
	}
	return groupFrom(ctx, cl, rows, name)
}

// groupFrom finds the group name among the list's rows and reads its
// rules.
func groupFrom(ctx context.Context, cl *pve.Client, rows []*pve.Config, name string) (*engine.LiveObj, error) {
	for _, row := range rows {
		if row.Get("group") != name {
			continue
		}
		rules, err := readRules(ctx, cl, groupPath(name))
		if err != nil {
			return nil, err
		}
		st := &sgState{Comment: row.Get("comment"), Digest: row.Get("digest"), Rules: rules}
		cfg := pve.ConfigOf(map[string]string{"group": name})
		if st.Comment != "" {
			cfg.Set("comment", st.Comment)
		}
		return &engine.LiveObj{Exists: true, Config: cfg, Digest: rules.Digest + st.Digest, State: st}, nil
	}
	return &engine.LiveObj{}, nil
}

func (securityGroupKind) Observe(ctx context.Context, lc *engine.LiveConn, r *spec.Resource) (*engine.LiveObj, error) {
	rows, err := lc.SectionRows(ctx, fwGroupsPath) // the list once per plan
	if err != nil {
		return nil, err
	}
	return groupFrom(ctx, lc.Client, rows, groupName(r))
}

func sgStateOf(lo *engine.LiveObj) *sgState {
	if lo != nil {
		if st, ok := lo.State.(*sgState); ok {
			return st
		}
	}
	return &sgState{Rules: fwRules{Rules: []map[string]string{}}}
}

func (securityGroupKind) NewState(lo *engine.LiveObj) any { return sgStateOf(lo) }

func (securityGroupKind) DecodeState(raw json.RawMessage) (any, error) {
	st := &sgState{}
	return st, json.Unmarshal(raw, st)
}

func (securityGroupKind) Compare(b *engine.Builder, r *spec.Resource, lo *engine.LiveObj, c *engine.Change) error {
	w, err := wireOf(r)
	if err != nil {
		return err
	}
	st := sgStateOf(lo)
	c.State = st
	if want, set := r.Params.Lookup("comment"); set && want != st.Comment {
		c.Diff = append(c.Diff, compare.Diff("comment", compare.NilIfEmpty(st.Comment), want))
	}
	c.Diff = append(c.Diff, ruleDiffs("rules", st.Rules.Rules, w.Rules)...)
	engine.UpdateForDiff(c)
	return nil
}

func (securityGroupKind) Create(ctx context.Context, x *engine.Execution, c *engine.Change) error {
	w, err := wireOf(c.Resource)
	if err != nil {
		return err
	}
	name := groupName(c.Resource)
	params := url.Values{"group": {name}}
	setIf(params, "comment", c.Resource.Params.Get("comment"))
	if err := x.Client.Do(ctx, http.MethodPost, fwGroupsPath, params, nil); err != nil {
		return fmt.Errorf("create security group %s: %w", name, err)
	}
	return applyRules(ctx, x, groupPath(name), fwRules{Rules: []map[string]string{}}, w.Rules)
}

func (securityGroupKind) Update(ctx context.Context, x *engine.Execution, c *engine.Change) error {
	w, err := wireOf(c.Resource)
	if err != nil {
		return err
	}
	name := groupName(c.Resource)
	st := sgStateOf(&engine.LiveObj{State: c.State})
	if want, set := c.Resource.Params.Lookup("comment"); set && want != st.Comment {
		params := url.Values{"group": {name}, "rename": {name}, "comment": {want}}
		setIf(params, "digest", st.Digest)
		if err := x.Client.Do(ctx, http.MethodPost, fwGroupsPath, params, nil); err != nil {
			return fmt.Errorf("change the comment of security group %s: %w", name, err)
		}
	}
	return applyRules(ctx, x, groupPath(name), st.Rules, w.Rules)
}

func (securityGroupKind) Remove(ctx context.Context, x *engine.Execution, c *engine.Change) error {
	name := groupName(c.Resource)
	st := sgStateOf(&engine.LiveObj{State: c.State})
	if err := applyRules(ctx, x, groupPath(name), st.Rules, nil); err != nil {
		return err
	}
	if err := x.Client.Do(ctx, http.MethodDelete, groupPath(name), nil, nil); err != nil {
		return fmt.Errorf("delete security group %s: %w", name, err)
	}
	return nil
}

func (securityGroupKind) Current(ctx context.Context, cl *pve.Client, c *engine.Change) (*engine.LiveObj, error) {
	return readGroup(ctx, cl, groupName(c.Resource))
}

// ReadCalls: GET /cluster/firewall/groups is open to all, then each
// group's rules are read (GET /cluster/firewall/groups/{group}).
func (securityGroupKind) ReadCalls(r *spec.Resource) []engine.APICall {
	return []engine.APICall{engine.Call("GET", fwGroupsPath, "to read the security groups"),
		engine.Call("GET", fwGroupsPath+"/{group}", "to read the security group's rules", "group", groupName(r))}
}

// ChangeCalls: the group's create or rename (POST), its rules (POST, PUT
// and DELETE /cluster/firewall/groups/{group}[/{pos}]), its delete.
func (securityGroupKind) ChangeCalls(c *engine.Change, _ *engine.LiveObj) []engine.APICall {
	name, why := groupName(c.Resource), "to "+c.Action.String()+" the security group"
	rules := []engine.APICall{
		engine.Call("POST", fwGroupsPath+"/{group}", why, "group", name),
		engine.Call("PUT", fwGroupsPath+"/{group}/{pos}", why, "group", name, "pos", "0"),
		engine.Call("DELETE", fwGroupsPath+"/{group}/{pos}", why, "group", name, "pos", "0"),
	}
	switch c.Action {
	case engine.Create, engine.Update:
		return append([]engine.APICall{engine.Call("POST", fwGroupsPath, why, "group", name)}, rules...)
	case engine.Delete:
		return append(rules, engine.Call("DELETE", fwGroupsPath+"/{group}", why, "group", name))
	case engine.Replace:
		return append(append([]engine.APICall{engine.Call("POST", fwGroupsPath, why, "group", name)}, rules...), engine.Call("DELETE", fwGroupsPath+"/{group}", why, "group", name))
	}
	return nil
}
