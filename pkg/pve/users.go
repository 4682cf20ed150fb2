package pve

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
)

// User is one row of GET /access/users?full=1: the user's settings and
// its API tokens' settings. PVE never answers a token's secret again
// after the call that made it.
type User struct {
	ID string
	// Config holds the settings as form values (enable, expire, email,
	// firstname, lastname, comment, keys, groups as a comma list).
	Config *Config
	// Tokens holds each token's settings (comment, expire, privsep) by
	// token id (the part after "!").
	Tokens map[string]*Config
}

// Users lists the users the caller may see, with their tokens, in one
// call. PVE lists only users the caller may audit (User.Modify or
// Sys.Audit on /access/groups, or on a group of the user; pve-access-control
// API2/User.pm index).
func (c *Client) Users(ctx context.Context) (map[string]*User, error) {
	var rows []map[string]json.RawMessage
	if err := c.Do(ctx, http.MethodGet, "/access/users", url.Values{"full": {"1"}}, &rows); err != nil {
		return nil, fmt.Errorf("list users: %w", err)
	}
	out := map[string]*User{}
	for _, row := range rows {
		var id string
		if err := json.Unmarshal(row["userid"], &id); err != nil || id == "" {
			return nil, fmt.Errorf("list users: a row without userid")
		}
		var tokens []map[string]json.RawMessage
		if raw, ok := row["tokens"]; ok && !isNull(raw) {
			if err := json.Unmarshal(raw, &tokens); err != nil {
				return nil, fmt.Errorf("list users: %s: tokens: %w", id, err)
			}
		}
		delete(row, "tokens")
		u := &User{ID: id, Tokens: map[string]*Config{}}
		var err error
		if u.Config, err = configOf(row); err != nil {
			return nil, fmt.Errorf("list users: %s: %w", id, err)
		}
		for _, t := range tokens {
			cfg, err := configOf(t)
			if err != nil {
				return nil, fmt.Errorf("list users: %s: token: %w", id, err)
			}
			tid := cfg.Get("tokenid")
			cfg.Delete("tokenid")
			u.Tokens[tid] = cfg
		}
		out[id] = u
	}
	return out, nil
}

// configOf renders decoded JSON members as a Config.
func configOf(m map[string]json.RawMessage) (*Config, error) {
	b, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	var cfg *Config
	if err := json.Unmarshal(b, &cfg); err != nil {
		return nil, err
	}
	if cfg == nil {
		cfg = NewConfig(0)
	}
	return cfg, nil
}

func userPath(userid string) string { return "/access/users/" + url.PathEscape(userid) }

func tokenPath(userid, tokenid string) string {
	return userPath(userid) + "/token/" + url.PathEscape(tokenid)
}

// CreateUser is POST /access/users (params include userid).
func (c *Client) CreateUser(ctx context.Context, params url.Values) error {
	return c.Do(ctx, http.MethodPost, "/access/users", params, nil)
}

// UpdateUser is PUT /access/users/{userid}. A groups parameter replaces
// the user's groups unless append is set.
func (c *Client) UpdateUser(ctx context.Context, userid string, params url.Values) error {
	return c.Do(ctx, http.MethodPut, userPath(userid), params, nil)
}

// DeleteUser is DELETE /access/users/{userid}; PVE removes the user's
// tokens, group memberships and ACL entries with it.
func (c *Client) DeleteUser(ctx context.Context, userid string) error {
	return c.Do(ctx, http.MethodDelete, userPath(userid), nil, nil)
}

// Secret is a value PVE answers once (a new API token's secret). It
// formats as REDACTED with every verb, in JSON too, so that an error or a
// log line that carries it by mistake does not show it; Reveal returns it.
type Secret struct{ v string }

// Reveal returns the secret itself: only for writing it where it belongs.
func (s Secret) Reveal() string { return s.v }

// IsZero reports whether no secret was answered.
func (s Secret) IsZero() bool { return s.v == "" }

func (s Secret) String() string   { return redacted }
func (s Secret) GoString() string { return redacted }

// Format keeps %v, %s, %q, %x and the rest from printing the value.
func (s Secret) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, redacted) }

// MarshalJSON keeps the value out of JSON.
func (s Secret) MarshalJSON() ([]byte, error) { return json.Marshal(redacted) }

// tokenAnswer is what POST …/token/{tokenid}, and PUT with regenerate,
// answer beside the token's settings.
type tokenAnswer struct {
	FullTokenID string `json:"full-tokenid"`
	Value       string `json:"value"`
}

// CreateToken is POST /access/users/{userid}/token/{tokenid} (comment,
// expire, privsep). It returns the token's secret, which PVE answers only
// here: the caller must store it at once.
func (c *Client) CreateToken(ctx context.Context, userid, tokenid string, params url.Values) (Secret, error) {
	var a tokenAnswer
	if err := c.Do(ctx, http.MethodPost, tokenPath(userid, tokenid), params, &a); err != nil {
		return Secret{}, err
	}
	if a.Value == "" {
		return Secret{}, fmt.Errorf("POST %s: the answer holds no token value", tokenPath(userid, tokenid))
	}
	return Secret{a.Value}, nil
}

// UpdateToken is PUT /access/users/{userid}/token/{tokenid}. With
// regenerate=1 PVE makes a new secret (the old one stops working) and
// answers it once, returned here; otherwise the Secret is zero.
func (c *Client) UpdateToken(ctx context.Context, userid, tokenid string, params url.Values) (Secret, error) {
	var a tokenAnswer
	if err := c.Do(ctx, http.MethodPut, tokenPath(userid, tokenid), params, &a); err != nil {
		return Secret{}, err
	}
	if params.Get("regenerate") == "1" && a.Value == "" {
		return Secret{}, fmt.Errorf("PUT %s: regenerate answered no token value", tokenPath(userid, tokenid))
	}
	return Secret{a.Value}, nil
}

// DeleteToken is DELETE /access/users/{userid}/token/{tokenid}; the
// token's ACL entries go with it.
func (c *Client) DeleteToken(ctx context.Context, userid, tokenid string) error {
	return c.Do(ctx, http.MethodDelete, tokenPath(userid, tokenid), nil, nil)
}

// ACLEntry is one row of GET /access/acl: a role granted to a user, group
// or token on a path.
type ACLEntry struct {
	Path      string
	Type      string // user | group | token
	UGID      string // the user id, group id or full token id
	Role      string
	Propagate bool
}

// ACL lists the ACL entries the caller may see: PVE lists only those on
// paths where the caller may change permissions, or all of them with
// Sys.Audit on /access (pve-access-control API2/ACL.pm read_acl).
func (c *Client) ACL(ctx context.Context) ([]ACLEntry, error) {
	var rows []struct {
		Path      string          `json:"path"`
		Type      string          `json:"type"`
		UGID      string          `json:"ugid"`
		RoleID    string          `json:"roleid"`
		Propagate json.RawMessage `json:"propagate"`
	}
	if err := c.Do(ctx, http.MethodGet, "/access/acl", nil, &rows); err != nil {
		return nil, fmt.Errorf("list ACL: %w", err)
	}
	out := make([]ACLEntry, 0, len(rows))
	for _, r := range rows {
		// propagate defaults to 1 (ACL.pm acl-propagate).
		prop, ok, err := formValue(r.Propagate)
		if err != nil {
			return nil, fmt.Errorf("list ACL: propagate: %w", err)
		}
		out = append(out, ACLEntry{Path: r.Path, Type: r.Type, UGID: r.UGID, Role: r.RoleID, Propagate: !ok || prop != "0"})
	}
	return out, nil
}

// UpdateACL is PUT /access/acl: grant (or, with delete=1, revoke) roles
// on a path to users, groups or tokens.
func (c *Client) UpdateACL(ctx context.Context, params url.Values) error {
	return c.Do(ctx, http.MethodPut, "/access/acl", params, nil)
}
