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
	"github.com/pvectl/pvectl/pkg/spec"
)

// userKind manages User: identity is userid. Passwords are refused by
// spec. The spec's groups are the user's full set of groups: an update
// sends them without append, and PUT /access/users/{userid} then replaces
// the user's groups (pve-access-control API2/User.pm update_user).
type userKind struct{}

// Traits: a user is the cluster's.
func (userKind) Traits() engine.KindTraits { return engine.KindTraits{Scope: engine.ScopeCluster} }

const userCreatePath = "/access/users"

func userID(r *spec.Resource) string {
	if id := r.Params.Get("userid"); id != "" {
		return id
	}
	return r.Name
}

// userFields are the settings a user has besides its id; cleared is what
// PUT sends to clear one (`key: null` in the spec): PVE has no delete
// parameter for users, an empty value (expire 0: never, enable 1: PVE's
// default) does it (update_user writes what is defined, and user.cfg
// reads an empty field back as unset).
var userFields = map[string]string{
	"comment": "", "email": "", "firstname": "", "lastname": "", "keys": "", "groups": "",
	"expire": "0", "enable": "1",
}

// userObj is a user as PVE lists it, with every setting spelled as PUT
// would send it: no expire is 0, no enable is PVE's default 1, groups
// sorted.
func userObj(users map[string]*pve.User, id string) *engine.LiveObj {
	u := users[id]
	if u == nil {
		return &engine.LiveObj{}
	}
	cfg := pve.NewConfig(0)
	for k := range userFields {
		if v := u.Config.Get(k); v != "" {
			cfg.Set(k, v)
		}
	}
	if cfg.Get("expire") == "" {
		cfg.Set("expire", "0")
	}
	if cfg.Get("enable") == "" {
		cfg.Set("enable", "1")
	}
	if g := compare.SplitSet(cfg.Get("groups")); len(g) > 0 {
		cfg.Set("groups", strings.Join(g, ","))
	}
	return &engine.LiveObj{Exists: true, Config: cfg, Digest: engine.FieldsDigest(cfg)}
}

func (userKind) Observe(ctx context.Context, lc *engine.LiveConn, r *spec.Resource) (*engine.LiveObj, error) {
	users, err := lc.UserList(ctx)
	if err != nil {
		return nil, err
	}
	return userObj(users, userID(r)), nil
}

// desiredUser is what the spec asks of the user's settings: the keys it
// writes, and the cleared value of each key it writes as null.
func desiredUser(r *spec.Resource) map[string]string {
	out := map[string]string{}
	for k, v := range r.Params.All() {
		if _, ok := userFields[k]; ok {
			out[k] = v
		}
	}
	for _, k := range r.Remove {
		if v, ok := userFields[k]; ok {
			out[k] = v
		}
	}
	return out
}

func (userKind) Compare(b *engine.Builder, r *spec.Resource, lo *engine.LiveObj, c *engine.Change) error {
	cmp := compare.Comparer{M: b.Method("POST", userCreatePath)}
	want := desiredUser(r)
	for _, k := range slices.Sorted(maps.Keys(want)) {
		dv, lv := want[k], lo.Config.Get(k)
		if sameAccessValue(cmp, k, dv, lv) {
			continue
		}
		c.Diff = append(c.Diff, compare.Diff(k, compare.NilIfEmpty(lv), compare.NilIfEmpty(dv)))
	}
	if !engine.UpdateForDiff(c) {
		return nil
	}
	c.Params = map[string]string{}
	for _, d := range c.Diff {
		c.Params[d.Path] = want[d.Path]
		if d.Path == "groups" {
			c.Reasons = append(c.Reasons, "the spec's groups are the user's full set: the user leaves any group the spec does not name")
		}
	}
	return nil
}

// sameAccessValue compares a user's or token's setting: unordered lists
// (groups) as sets, empty as unset, the rest by the create call's types.
func sameAccessValue(cmp compare.Comparer, key, desired, live string) bool {
	if key == "groups" {
		return compare.EqualSet(desired, live)
	}
	if desired == "" || live == "" {
		return desired == live
	}
	return compare.EqualScalar(key, cmp.Param(key), desired, live)
}

func (userKind) Create(ctx context.Context, x *engine.Execution, c *engine.Change) error {
	id := userID(c.Resource)
	params := toValues(c.Resource.Params.Map())
	params.Set("userid", id)
	if err := x.Client.CreateUser(ctx, params); err != nil {
		return fmt.Errorf("create user %s: %w", id, err)
	}
	return nil
}

func (userKind) Update(ctx context.Context, x *engine.Execution, c *engine.Change) error {
	id := userID(c.Resource)
	if err := x.Client.UpdateUser(ctx, id, toValues(c.Params)); err != nil {
		return fmt.Errorf("update user %s: %w", id, err)
	}
	return nil
}

func (userKind) Remove(ctx context.Context, x *engine.Execution, c *engine.Change) error {
	id := userID(c.Resource)
	if owner, _, _ := strings.Cut(x.Client.TokenID(), "!"); owner == id {
		return fmt.Errorf("refusing to delete user %s: the API token this run uses (%s) is one of its tokens and would go with it", id, x.Client.TokenID())
	}
	if err := x.Client.DeleteUser(ctx, id); err != nil && !pve.IsNotFound(err) {
		return fmt.Errorf("delete user %s: %w", id, err)
	}
	x.Msg("deleted user %s (PVE removes its API tokens and ACL entries with it)", id)
	return nil
}

func (userKind) Current(ctx context.Context, cl *pve.Client, c *engine.Change) (*engine.LiveObj, error) {
	users, err := cl.Users(ctx)
	if err != nil {
		return nil, err
	}
	return userObj(users, userID(c.Resource)), nil
}

// usersAudit is what reading users and their tokens truthfully needs:
// GET /access/users lists only the users the caller may audit
// (pve-access-control API2/User.pm index: User.Modify or Sys.Audit on
// /access/groups, or on a group of the user; the preflight asks for
// /access/groups, as a user's groups are not known before it is read).
func usersAudit(what string) engine.PermNeed {
	return engine.NeedAny("/access/groups", "to see "+what+" (PVE lists only the users a token may audit)", "User.Modify", "Sys.Audit")
}

// ReadCalls: GET /access/users is open to all but lists only the users
// the caller may audit.
func (userKind) ReadCalls(*spec.Resource) []engine.APICall {
	return []engine.APICall{engine.Call("GET", "/access/users", "to see the user").With(usersAudit("the user"))}
}

// ChangeCalls: POST /access/users, PUT and DELETE /access/users/{userid}
// (their rules: userid-param, userid-group in RPCEnvironment.pm).
func (userKind) ChangeCalls(c *engine.Change, _ *engine.LiveObj) []engine.APICall {
	id, why := userID(c.Resource), "to "+c.Action.String()+" the user"
	_, realm, _ := strings.Cut(id, "@")
	ofRealm := "to " + c.Action.String() + " a user of realm " + realm
	post := engine.Call("POST", "/access/users", why, "userid", id, "groups", c.Resource.Params.Get("groups")).Saying("Realm.AllocateUser", ofRealm)
	del := engine.Call("DELETE", "/access/users/{userid}", why, "userid", id).Saying("Realm.AllocateUser", ofRealm)
	switch c.Action {
	case engine.Create:
		return []engine.APICall{post}
	case engine.Update:
		return []engine.APICall{engine.Call("PUT", "/access/users/{userid}", why, "userid", id)}
	case engine.Delete:
		return []engine.APICall{del}
	case engine.Replace:
		return []engine.APICall{del, post}
	}
	return nil
}
