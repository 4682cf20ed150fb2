package pve

import (
	"bytes"
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

func TestRedaction(t *testing.T) {
	const (
		password    = "hunter2-pass"
		createdSecr = "0e4f7f3c-1111-2222-3333-444455556666"
	)
	f := newFakePVE(t, false)
	// A misbehaving server that echoes every credential it gets.
	f.handle("POST /nodes/pve/qemu", func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		writeJSON(w, 400, map[string]any{
			"data":    nil,
			"message": "bad request from " + r.Header.Get("Authorization") + " with " + r.PostForm.Get("cipassword"),
			"errors":  map[string]any{"cipassword": "value '" + r.PostForm.Get("cipassword") + "' is too weak"},
		})
	})
	f.handle("GET /nodes/pve/qemu/100/config", func(w http.ResponseWriter, r *http.Request) {
		rawStatus(w, 500, "no such token "+strings.TrimPrefix(r.Header.Get("Authorization"), "PVEAPIToken="), `{"data":null}`)
	})
	f.handle("POST /access/users/root@pam/token/new", data(map[string]any{
		"full-tokenid": "root@pam!new",
		"info":         map[string]any{"privsep": 1},
		"value":        createdSecr,
	}))
	f.handle("GET /access/ticket", data(map[string]any{"ticket": "PVE:root@pam:AAAA", "CSRFPreventionToken": "abc:def", "secret": "x"}))
	var trace bytes.Buffer
	c := f.client(t, WithDebug(&trace))
	ctx := context.Background()

	var errs []error
	errs = append(errs, c.CreateQemu(ctx, "pve", url.Values{"vmid": {"100"}, "cipassword": {password}, "name": {"vm1"}}))
	_, err := c.QemuConfig(ctx, "pve", 100)
	errs = append(errs, err)
	var created struct {
		Value string `json:"value"`
	}
	if err := c.Do(ctx, "POST", "/access/users/root@pam/token/new", url.Values{"privsep": {"1"}}, &created); err != nil {
		t.Fatal(err)
	}
	if created.Value != createdSecr {
		t.Errorf("got created value %q, want the real secret for the caller", created.Value)
	}
	if err := c.Do(ctx, "GET", "/access/ticket", url.Values{"password": {password}, "username": {"root@pam"}}, nil); err != nil {
		t.Fatal(err)
	}

	out := trace.String()
	for _, e := range errs {
		if e == nil {
			t.Fatal("got no error, want the server's 400/500")
		}
		out += "\nERROR: " + e.Error()
	}
	for _, secret := range []string{testSecret, password, url.QueryEscape(password), createdSecr, "PVE:root@pam:AAAA", "abc:def"} {
		if strings.Contains(out, secret) {
			t.Errorf("secret %q leaked into the trace or errors:\n%s", secret, out)
		}
	}
	wants := []string{
		"--> POST " + f.srv.URL + "/api2/json/nodes/pve/qemu\n",
		"    Authorization: PVEAPIToken=root@pam!ci=REDACTED\n",
		"    Content-Type: application/x-www-form-urlencoded\n",
		"    cipassword=REDACTED&name=vm1&vmid=100\n",
		"<-- 400 Bad Request (",
		"--> GET " + f.srv.URL + "/api2/json/access/ticket?password=REDACTED&username=root%40pam\n",
		`"value":"REDACTED"`,
		`"ticket":"REDACTED"`,
		`"CSRFPreventionToken":"REDACTED"`,
		`"full-tokenid":"root@pam!new"`,
		"ERROR: POST /nodes/pve/qemu: 400 bad request from PVEAPIToken=root@pam!ci=REDACTED with REDACTED: cipassword: value 'REDACTED' is too weak",
		"ERROR: GET /nodes/pve/qemu/100/config: 500 no such token root@pam!ci=REDACTED",
	}
	for _, w := range wants {
		if !strings.Contains(out, w) {
			t.Errorf("trace lacks %q; got:\n%s", w, out)
		}
	}
	if !regexp.MustCompile(`<-- 200 OK \(\d+ms\) POST /access/users/root@pam/token/new\n`).MatchString(out) {
		t.Errorf("trace lacks the 200 line with a duration; got:\n%s", out)
	}
}

func TestTraceTransportError(t *testing.T) {
	f := newFakePVE(t, false)
	var trace bytes.Buffer
	c := f.client(t, WithDebug(&trace))
	f.srv.Close()
	if _, err := c.Version(context.Background()); err == nil {
		t.Fatal("got no error from a closed server")
	}
	if !strings.Contains(trace.String(), "<-- error (") || strings.Contains(trace.String(), testSecret) {
		t.Errorf("got trace %q, want an error line without the secret", trace.String())
	}
}

func TestRedactBody(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{name: "empty", in: "  ", want: ""},
		{name: "nested", in: `{"data":[{"password":"p","x":{"secret":"s","keep":1.50}}]}`, want: `{"data":[{"password":"REDACTED","x":{"keep":1.50,"secret":"REDACTED"}}]}`},
		{name: "null stays null", in: `{"data":{"value":null}}`, want: `{"data":{"value":null}}`},
		{name: "html kept on one line", in: "<html>\n <b>502</b>\n</html>", want: "<html> <b>502</b> </html>"},
		{name: "no html escaping", in: `{"t":"a<b>&c"}`, want: `{"t":"a<b>&c"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := redactBody([]byte(tc.in)); got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}
