package planner

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/pvectl/pvectl/pkg/planner/compare"
	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/pve/acl"
	"github.com/pvectl/pvectl/pkg/spec"
)

// aclKind manages ACL: one grant (a role on a path to one user, group or
// token). PVE has no ids for ACL entries, so a grant is found by what it
// grants, and a spec that changes the path, the principal or the role
// names another grant: that one is created, and the old one stays unless
// a document with `state: absent` revokes it (the plan says which other
// roles the principal holds there). propagate changes in place: PUT
// /access/acl again with the new flag (pve-access-control API2/ACL.pm
// update_acl sets it per path, principal and role). Revoking is PUT with
// delete=1.
type aclKind struct{}

// Traits: the ACL is the cluster's.
func (aclKind) Traits() engine.KindTraits { return engine.KindTraits{Scope: engine.ScopeCluster} }

// aclLive is what observe saw beside the grant: the other roles the
// principal holds on the path.
type aclLive struct{ others []string }

// grantParams are the PUT /access/acl parameters naming r's grant.
func grantParams(r *spec.Resource) map[string]string {
	path, typ, ugid, role, _ := spec.ACLGrant(r)
	return map[string]string{"path": path, typ + "s": ugid, "roles": role}
}

// wantPropagate is the spec's propagate flag; PVE's default is 1.
func wantPropagate(r *spec.Resource) string {
	if v, ok := r.Params.Lookup("propagate"); ok {
		return v
	}
	return "1"
}

func aclObj(entries []pve.ACLEntry, r *spec.Resource) *engine.LiveObj {
	path, typ, ugid, role, ok := spec.ACLGrant(r)
	if !ok {
		return &engine.LiveObj{} // Load refuses such a spec
	}
	lo := &engine.LiveObj{}
	var others []string
	for _, e := range entries {
		if e.Path != path || e.Type != typ || e.UGID != ugid {
			continue
		}
		if e.Role != role {
			others = append(others, e.Role)
			continue
		}
		cfg := pve.ConfigOf(grantParams(r))
		cfg.Set("propagate", "0")
		if e.Propagate {
			cfg.Set("propagate", "1")
		}
		lo.Exists, lo.Config, lo.Digest = true, cfg, engine.FieldsDigest(cfg)
	}
	slices.Sort(others)
	lo.State = aclLive{others: slices.Compact(others)}
	return lo
}

func (aclKind) Observe(ctx context.Context, lc *engine.LiveConn, r *spec.Resource) (*engine.LiveObj, error) {
	entries, err := lc.ACLList(ctx)
	if err != nil {
		return nil, err
	}
	return aclObj(entries, r), nil
}

func (aclKind) Compare(_ *engine.Builder, r *spec.Resource, lo *engine.LiveObj, c *engine.Change) error {
	want, live := wantPropagate(r), lo.Config.Get("propagate")
	if want == live {
		c.Action = engine.NoOp
		return nil
	}
	c.Diff = []engine.FieldDiff{compare.Diff("propagate", live, want)}
	c.Action, c.Reasons = engine.Update, []string{"propagate changed (the grant is made again with the new flag)"}
	c.Params = grantParams(r)
	c.Params["propagate"] = want
	return nil
}

// CheckCreate tells, for a grant to make, which other roles the principal
// holds on the path that no ACL of the specs grants: PVE keeps no record
// of which document made a grant, so a spec whose role changed leaves the
// old grant behind, and only the plan can say so.
func (aclKind) CheckCreate(b *engine.Builder, r *spec.Resource, lo *engine.LiveObj, c *engine.Change) error {
	st, _ := lo.State.(aclLive)
	if len(st.others) == 0 {
		return nil
	}
	path, typ, ugid, _, _ := spec.ACLGrant(r)
	granted := map[string]bool{}
	for _, o := range b.Set.Resources {
		if o.Kind != r.Kind || o.Connection != r.Connection || o.State != spec.Present {
			continue
		}
		if p, t, u, role, ok := spec.ACLGrant(o); ok && p == path && t == typ && u == ugid {
			granted[role] = true
		}
	}
	var stray []string
	for _, role := range st.others {
		if !granted[role] {
			stray = append(stray, role)
		}
	}
	if len(stray) > 0 {
		c.Reasons = append(c.Reasons, fmt.Sprintf("%s %s also holds %s on %s, which no ACL of these specs grants: if this document granted it before, it stays until a document with state: absent revokes it",
			typ, ugid, strings.Join(stray, ", "), path))
	}
	return nil
}

func (aclKind) Create(ctx context.Context, x *engine.Execution, c *engine.Change) error {
	params := grantParams(c.Resource)
	params["propagate"] = wantPropagate(c.Resource)
	if err := x.Client.UpdateACL(ctx, toValues(params)); err != nil {
		return fmt.Errorf("grant %s: %w", grantText(c.Resource), err)
	}
	return nil
}

func (aclKind) Update(ctx context.Context, x *engine.Execution, c *engine.Change) error {
	if err := x.Client.UpdateACL(ctx, toValues(c.Params)); err != nil {
		return fmt.Errorf("grant %s: %w", grantText(c.Resource), err)
	}
	return nil
}

func (aclKind) Remove(ctx context.Context, x *engine.Execution, c *engine.Change) error {
	params := grantParams(c.Resource)
	params["delete"] = "1"
	// A principal or role that is gone took its grants with it.
	if err := x.Client.UpdateACL(ctx, toValues(params)); err != nil && !pve.IsNotFound(err) {
		return fmt.Errorf("revoke %s: %w", grantText(c.Resource), err)
	}
	return nil
}

func (aclKind) Current(ctx context.Context, cl *pve.Client, c *engine.Change) (*engine.LiveObj, error) {
	entries, err := cl.ACL(ctx)
	if err != nil {
		return nil, err
	}
	return aclObj(entries, c.Resource), nil
}

// grantText names a grant in messages: "role PVEVMAdmin on /pool/lab to
// token ci@pve!deploy".
func grantText(r *spec.Resource) string {
	path, typ, ugid, role, _ := spec.ACLGrant(r)
	return fmt.Sprintf("role %s on %s to %s %s", role, path, typ, ugid)
}

// permModify is RPCEnvironment.pm check_perm_modify: Permissions.Modify
// on the path, or the allocate privilege of the object it names.
func permModify(path, why string) engine.PermNeed {
	return engine.NeedAny(path, why, acl.PermModifyPrivs(path)...)
}

// ReadCalls: GET /access/acl is open to all but lists only the entries on
// paths where the caller may change permissions, or every entry with
// Sys.Audit on /access (API2/ACL.pm read_acl).
func (aclKind) ReadCalls(r *spec.Resource) []engine.APICall {
	list := engine.Call("GET", "/access/acl", "to see the grant")
	path, _, _, _, ok := spec.ACLGrant(r)
	if !ok {
		return []engine.APICall{list}
	}
	n := permModify(path, "to see the grant (PVE lists only the ACL entries on paths where the token may change permissions)")
	n.Alt = []engine.PermNeed{engine.NeedPriv("/access", "", "Sys.Audit")}
	return []engine.APICall{list.With(n)}
}

// ChangeCalls: PUT /access/acl (its rule: perm-modify on the path), to
// grant and to revoke. Without Permissions.Modify there, update_acl lets
// the caller grant or revoke only a role whose every privilege it holds
// there itself, and never NoAccess (API2/ACL.pm). A custom role's
// privileges are not known here: PVE decides at apply.
func (aclKind) ChangeCalls(c *engine.Change, _ *engine.LiveObj) []engine.APICall {
	path, _, _, role, ok := spec.ACLGrant(c.Resource)
	if !ok {
		return nil
	}
	why := "to " + c.Action.String() + " " + grantText(c.Resource)
	put := engine.Call("PUT", "/access/acl", why, "path", path)
	privs, builtin := acl.BuiltinRoles()[role]
	switch {
	case role == acl.NoAccess:
		put = put.With(engine.NeedPriv(path, why+" (NoAccess needs it)", "Permissions.Modify"))
	case builtin:
		n := engine.NeedPriv(path, why+" (or every privilege of the role)", "Permissions.Modify")
		n.Alt = []engine.PermNeed{engine.NeedPriv(path, why, slices.Sorted(maps.Keys(privs))...)}
		put = put.With(n)
	}
	return []engine.APICall{put}
}
