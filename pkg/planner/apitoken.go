package planner

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/pvectl/pvectl/pkg/planner/compare"
	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/spec"
)

// tokenKind manages APIToken: identity is userid + tokenid. comment,
// expire and privsep change in place (PUT …/token/{tokenid}, pve-access-
// control API2/User.pm update_token_info). A token's secret exists once,
// in the answer of the call that makes it: apply writes it to secretFile,
// or hands it to Hooks.Output; it never enters a plan, a message or an
// error. A token whose secretFile is missing gets a new secret
// (regenerate), as PVE cannot show the old one again.
type tokenKind struct{}

// Traits: a token belongs to a user, the cluster's.
func (tokenKind) Traits() engine.KindTraits { return engine.KindTraits{Scope: engine.ScopeCluster} }

const tokenCreatePath = "/access/users/{userid}/token/{tokenid}"

// tokenFields are a token's settings, with what PUT sends to clear one
// (`key: null`): expire 0 is never; privsep goes back to PVE's default 1;
// comment is deleted (the only key update_token_info deletes).
var tokenFields = map[string]string{"comment": "", "expire": "0", "privsep": "1"}

// tokenLive is what observe reads beside the token's settings.
type tokenLive struct {
	// fileMissing: the spec names a secretFile and there is none.
	fileMissing bool
}

func tokenIDs(r *spec.Resource) (userid, tokenid string) {
	tokenid = r.Params.Get("tokenid")
	if tokenid == "" {
		tokenid = r.Name
	}
	return r.Params.Get("userid"), tokenid
}

func fullTokenID(r *spec.Resource) string {
	u, t := tokenIDs(r)
	return u + "!" + t
}

// tokenObj is a token as PVE lists it, its settings spelled as PUT would
// send them (no expire is 0, no privsep is PVE's default 1).
func tokenObj(users map[string]*pve.User, r *spec.Resource) *engine.LiveObj {
	uid, tid := tokenIDs(r)
	u := users[uid]
	if u == nil || u.Tokens[tid] == nil {
		return &engine.LiveObj{}
	}
	t := u.Tokens[tid]
	cfg := pve.ConfigOf(map[string]string{"expire": "0", "privsep": "1"})
	for k := range tokenFields {
		if v := t.Get(k); v != "" {
			cfg.Set(k, v)
		}
	}
	return &engine.LiveObj{Exists: true, Config: cfg, Digest: engine.FieldsDigest(cfg)}
}

func (tokenKind) Observe(ctx context.Context, lc *engine.LiveConn, r *spec.Resource) (*engine.LiveObj, error) {
	users, err := lc.UserList(ctx)
	if err != nil {
		return nil, err
	}
	lo := tokenObj(users, r)
	if path := spec.Token(r).SecretFile; path != "" && lo.Exists {
		_, err := os.Stat(path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			lo.State = tokenLive{fileMissing: true}
		case err != nil:
			return nil, fmt.Errorf("secretFile: %w", err)
		}
	}
	return lo, nil
}

func (tokenKind) Compare(b *engine.Builder, r *spec.Resource, lo *engine.LiveObj, c *engine.Change) error {
	cmp := compare.Comparer{M: b.Method("POST", tokenCreatePath)}
	want := map[string]string{}
	for k, cleared := range tokenFields {
		if v, ok := r.Params.Lookup(k); ok {
			want[k] = v
		} else if slices.Contains(r.Remove, k) {
			want[k] = cleared
		}
	}
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if !sameAccessValue(cmp, k, want[k], lo.Config.Get(k)) {
			c.Diff = append(c.Diff, compare.Diff(k, compare.NilIfEmpty(lo.Config.Get(k)), compare.NilIfEmpty(want[k])))
		}
	}
	c.Reasons = compare.Reasons(c.Diff)
	c.Params = map[string]string{}
	for _, d := range c.Diff {
		if d.Path == "comment" && want["comment"] == "" {
			c.Params["delete"] = "comment"
			continue
		}
		c.Params[d.Path] = want[d.Path]
	}
	if st, _ := lo.State.(tokenLive); st.fileMissing {
		path := spec.Token(r).SecretFile
		if lc := b.Obs.Conns[r.Connection]; lc != nil && lc.Client != nil && lc.Client.TokenID() == fullTokenID(r) {
			c.Reasons = append(c.Reasons, fmt.Sprintf("secretFile %s is missing, but this is the token the run connects with: pvectl does not regenerate it (write its secret there yourself)", path))
		} else {
			c.Diff = append(c.Diff, compare.Diff("secretFile", nil, path))
			c.Params["regenerate"] = "1"
			c.Reasons = append(c.Reasons, fmt.Sprintf("NEW SECRET: secretFile %s is missing and PVE shows a token's secret only once, so the token's secret is regenerated and written there: the current secret STOPS WORKING", path))
		}
	}
	if len(c.Params) == 0 {
		c.Action, c.Params = engine.NoOp, nil
		return nil
	}
	c.Action = engine.Update
	return nil
}

func (tokenKind) Create(ctx context.Context, x *engine.Execution, c *engine.Change) error {
	uid, tid := tokenIDs(c.Resource)
	params := toValues(c.Resource.Params.Map())
	params.Del("userid")
	params.Del("tokenid")
	s, err := x.Client.CreateToken(ctx, uid, tid, params)
	if err != nil {
		return fmt.Errorf("create API token %s: %w", fullTokenID(c.Resource), err)
	}
	return deliverSecret(x, c, s)
}

func (tokenKind) Update(ctx context.Context, x *engine.Execution, c *engine.Change) error {
	uid, tid := tokenIDs(c.Resource)
	s, err := x.Client.UpdateToken(ctx, uid, tid, toValues(c.Params))
	if err != nil {
		return fmt.Errorf("update API token %s: %w", fullTokenID(c.Resource), err)
	}
	if c.Params["regenerate"] == "1" {
		return deliverSecret(x, c, s)
	}
	return nil
}

func (tokenKind) Remove(ctx context.Context, x *engine.Execution, c *engine.Change) error {
	uid, tid := tokenIDs(c.Resource)
	full := fullTokenID(c.Resource)
	if x.Client.TokenID() == full {
		return fmt.Errorf("refusing to delete API token %s: it is the token this run connects with", full)
	}
	if err := x.Client.DeleteToken(ctx, uid, tid); err != nil && !pve.IsNotFound(err) {
		return fmt.Errorf("delete API token %s: %w", full, err)
	}
	// The secret in secretFile is worth nothing now: do not leave it lying about.
	if path := spec.Token(c.Resource).SecretFile; path != "" {
		switch err := os.Remove(path); {
		case err == nil:
			x.Msg("removed secretFile %s", path)
		case !errors.Is(err, fs.ErrNotExist):
			return fmt.Errorf("deleted API token %s, but could not remove its secretFile: %w", full, err)
		}
	}
	return nil
}

func (tokenKind) Current(ctx context.Context, cl *pve.Client, c *engine.Change) (*engine.LiveObj, error) {
	users, err := cl.Users(ctx)
	if err != nil {
		return nil, err
	}
	return tokenObj(users, c.Resource), nil
}

// ReadCalls: tokens come with the users (GET /access/users?full=1).
func (tokenKind) ReadCalls(*spec.Resource) []engine.APICall {
	return []engine.APICall{engine.Call("GET", "/access/users", "to see the token").With(usersAudit("the token"))}
}

// ChangeCalls: POST, PUT (a new secret too) and DELETE
// /access/users/{userid}/token/{tokenid}; their rules' "self"
// alternative never holds for an API token, which is not its user.
func (tokenKind) ChangeCalls(c *engine.Change, _ *engine.LiveObj) []engine.APICall {
	why := "to " + c.Action.String() + " the API token"
	uid, tid := tokenIDs(c.Resource)
	mk := func(method string) engine.APICall {
		return engine.Call(method, "/access/users/{userid}/token/{tokenid}", why, "userid", uid, "tokenid", tid)
	}
	switch c.Action {
	case engine.Create:
		return []engine.APICall{mk("POST")}
	case engine.Update:
		return []engine.APICall{mk("PUT")}
	case engine.Delete:
		return []engine.APICall{mk("DELETE")}
	case engine.Replace:
		return []engine.APICall{mk("DELETE"), mk("POST")}
	}
	return nil
}

// deliverSecret puts a secret PVE answered once where the spec wants it:
// secretFile, or the hooks' one-time output. If the file cannot be
// written, the secret goes to the output all the same, so that it is not
// lost; the error names the file, never the secret.
func deliverSecret(x *engine.Execution, c *engine.Change, s pve.Secret) error {
	path := spec.Token(c.Resource).SecretFile
	if path == "" {
		x.Output("secret", s.Reveal(), true)
		return nil
	}
	if err := writeSecretFile(path, s.Reveal()); err != nil {
		x.Output("secret", s.Reveal(), true)
		return fmt.Errorf("API token %s has a new secret, but it could not be written to secretFile (%w): it is shown once at the end instead, as PVE will not show it again",
			fullTokenID(c.Resource), err)
	}
	x.Msg("secret written to %s (mode 0600)", path)
	return nil
}

// writeSecretFile writes value (without a newline: the file holds the
// secret and nothing else) to path with mode 0600, creating a missing
// directory with mode 0700. It writes a temporary file beside path and
// renames it, so that no reader ever sees half a secret and an existing
// file (or a symlink in its place) is replaced, not written through.
func writeSecretFile(path, value string) (err error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if err := f.Chmod(0o600); err != nil {
		return err
	}
	if _, err := f.WriteString(value); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
