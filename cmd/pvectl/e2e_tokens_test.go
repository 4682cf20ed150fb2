package main

import (
	"context"
	"net/http"
	"net/url"
	"testing"
)

// apiToken is a token made through the API for a test.
type apiToken struct {
	Full  string `json:"full-tokenid"`
	Value string `json:"value"`
}

// env is the environment that has pvectl use the token.
func (tok apiToken) env() []string {
	return []string{"PROXMOX_TOKEN_ID=" + tok.Full, "PROXMOX_TOKEN_SECRET=" + tok.Value}
}

// grant is one role on one path.
type grant struct{ path, role string }

// adminDo is a call the test makes as the simulator's admin; it fails the
// test on an error.
func (e *simEnv) adminDo(method, path string, params url.Values, out any) {
	e.t.Helper()
	if err := e.client.Do(context.Background(), method, path, params, out); err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
}

// privsepToken makes user (with its realm) and a privilege-separated
// token name of it, and grants each role to both — a privilege-separated
// token holds only what its user holds too.
func (e *simEnv) privsepToken(t *testing.T, user, name string, grants ...grant) apiToken {
	t.Helper()
	e.adminDo(http.MethodPost, "/access/users", url.Values{"userid": {user}}, nil)
	var tok apiToken
	e.adminDo(http.MethodPost, "/access/users/"+user+"/token/"+name, url.Values{"privsep": {"1"}}, &tok)
	e.grant(tok, user, grants...)
	return tok
}

// grant gives each role to the token and its user.
func (e *simEnv) grant(tok apiToken, user string, grants ...grant) {
	e.t.Helper()
	for _, g := range grants {
		for _, who := range []url.Values{{"users": {user}}, {"tokens": {tok.Full}}} {
			who.Set("path", g.path)
			who.Set("roles", g.role)
			e.adminDo(http.MethodPut, "/access/acl", who, nil)
		}
	}
}
