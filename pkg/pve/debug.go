package pve

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/pvectl/pvectl/pkg/secret"
)

const (
	redacted = secret.Redacted
	// traceBodyMax keeps one huge answer (a big cluster's resources) from
	// drowning the trace.
	traceBodyMax = 16 << 10
)

// sensitiveKey reports whether a parameter or JSON member carries a secret.
func sensitiveKey(k string) bool { return secret.Key(k) }

// secretsOf lists the literal secrets of one request, so that they can be
// scrubbed from anything PVE echoes back (error messages, traces, task
// exit statuses and logs).
func (c *Client) secretsOf(params url.Values) []string {
	var out []string
	if c.cfg.tokenSecret != "" {
		out = append(out, c.cfg.tokenSecret)
	}
	for k, vs := range params {
		if sensitiveKey(k) {
			out = append(out, vs...)
		}
	}
	return out
}

// scrub is secret.Scrub: one scrubber for everything pvectl shows.
func scrub(s string, secrets []string) string { return secret.Scrub(s, secrets) }

func redactValues(params url.Values) url.Values {
	out := make(url.Values, len(params))
	for k, vs := range params {
		if sensitiveKey(k) {
			out[k] = []string{redacted}
			continue
		}
		out[k] = vs
	}
	return out
}

func (c *Client) trace(s string) {
	if c.cfg.debug == nil {
		return
	}
	c.traceMu.Lock()
	defer c.traceMu.Unlock()
	_, _ = io.WriteString(c.cfg.debug, s)
}

// traceRequest shows a request; note, when set, stands for a body that is
// not shown (an upload's file).
func (c *Client) traceRequest(req *http.Request, params url.Values, secrets []string, note string) {
	if c.cfg.debug == nil {
		return
	}
	u := *req.URL
	form := req.Method == http.MethodPost || req.Method == http.MethodPut
	if !form && len(params) > 0 {
		u.RawQuery = redactValues(params).Encode()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "--> %s %s\n", req.Method, u.String())
	keys := make([]string, 0, len(req.Header))
	for k := range req.Header {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := req.Header.Get(k)
		if k == "Authorization" {
			v = "PVEAPIToken=" + c.cfg.tokenID + "=" + redacted
		}
		fmt.Fprintf(&b, "    %s: %s\n", k, v)
	}
	if form && len(params) > 0 {
		fmt.Fprintf(&b, "    %s\n", redactValues(params).Encode())
	}
	if note != "" {
		fmt.Fprintf(&b, "    %s\n", note)
	}
	c.trace(scrub(b.String(), secrets))
}

func (c *Client) traceResponse(method, path string, resp *http.Response, raw []byte, d time.Duration, secrets []string) {
	if c.cfg.debug == nil {
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "<-- %s (%dms) %s %s\n", resp.Status, d.Milliseconds(), method, path)
	body := redactBody(raw)
	if secretAnswer[method+" "+path] && body != "" {
		body = redacted // the answer is a secret itself, not a member of one
	}
	if len(body) > traceBodyMax {
		body = body[:traceBodyMax] + fmt.Sprintf("… (%d bytes more)", len(body)-traceBodyMax)
	}
	if body != "" {
		fmt.Fprintf(&b, "    %s\n", body)
	}
	c.trace(scrub(b.String(), secrets))
}

func (c *Client) traceFailure(method, path string, err error, d time.Duration) {
	if c.cfg.debug == nil {
		return
	}
	c.trace(scrub(fmt.Sprintf("<-- error (%dms) %s %s: %v\n", d.Milliseconds(), method, path, err), c.secretsOf(nil)))
}

// secretAnswer are the calls whose whole answer is a secret: SDN's lock
// token (pve-network SDN.pm lock returns it as the data).
var secretAnswer = map[string]bool{"POST /cluster/sdn/lock": true}

// redactBody masks secret members of a JSON answer (a created token's
// "value", a login "ticket") and renders it compactly on one line.
func redactBody(raw []byte) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return ""
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		// Not JSON (an HTML error page from a proxy): show it on one line.
		return strings.Join(strings.Fields(string(raw)), " ")
	}
	v = redactJSON(v)
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "(unprintable body)"
	}
	return strings.TrimSpace(b.String())
}

func redactJSON(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, val := range t {
			if sensitiveKey(k) && val != nil {
				t[k] = redacted
				continue
			}
			t[k] = redactJSON(val)
		}
	case []any:
		for i := range t {
			t[i] = redactJSON(t[i])
		}
	}
	return v
}
