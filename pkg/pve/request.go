package pve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pvectl/pvectl/internal/durfmt"
)

// maxResponse bounds how much of an answer is read: the largest legitimate
// ones (cluster resources, task logs) stay far below it.
const maxResponse = 64 << 20

// Response is the decoded PVE envelope.
type Response struct {
	Status  int
	Data    json.RawMessage
	Changes json.RawMessage // only GET /nodes/{node}/network has it
	Total   int             // list calls that page (task log) report the full count
}

// Do sends one request. path is relative to /api2/json ("/nodes/pve/qemu").
// GET/DELETE carry params in the query, POST/PUT as a form body. The "data"
// member is decoded into out when out is non-nil. Errors are *APIError.
func (c *Client) Do(ctx context.Context, method, path string, params url.Values, out any) error {
	resp, err := c.DoRaw(ctx, method, path, params)
	if err != nil {
		return err
	}
	if out == nil || isNull(resp.Data) {
		if !json.Valid(resp.Data) && len(resp.Data) > 0 {
			// Not decoded, so checked here (envelopeMembers leaves it).
			return fmt.Errorf("%s %s: decode answer: invalid JSON in data", strings.ToUpper(method), path)
		}
		return nil
	}
	switch d := out.(type) {
	case answerDecoder:
		err = d.decodeAnswer(resp.Data)
	case *Config:
		err = d.UnmarshalJSON(resp.Data) // configJSON checks all of it
	default:
		err = json.Unmarshal(resp.Data, out)
	}
	if err != nil {
		return fmt.Errorf("%s %s: decode answer: %w", strings.ToUpper(method), path, err)
	}
	return nil
}

// answerDecoder is an answer type that reads the JSON of Do's answer
// itself, checking all of it (as Config does): encoding/json's own pass
// over the text first would only repeat that.
type answerDecoder interface {
	decodeAnswer([]byte) error
}

// readTries bounds how often a GET is sent when PVE's proxy or the network
// fails it in passing (595/596/599 and friends, a dropped connection).
const readTries = 5

// DoRaw is Do returning the whole envelope. A GET that fails in transit is
// sent again (it changes nothing); other methods are sent exactly once.
func (c *Client) DoRaw(ctx context.Context, method, path string, params url.Values) (*Response, error) {
	for attempt := 1; ; attempt++ {
		resp, err := c.doOnce(ctx, method, path, params, nil)
		if err == nil || attempt >= readTries || !retryableRead(method, err) {
			return resp, err
		}
		if serr := Sleep(ctx, c.backoff(attempt)); serr != nil {
			return nil, err
		}
	}
}

// retryableRead: a GET (it changes nothing) that got no answer, a
// proxy/gateway error, or a plain 500 — pveproxy answers 500 for passing
// faults too (a worker that died, a cluster filesystem hiccup), and one of
// them must not abort a whole plan. A 500 that says the object does not
// exist is PVE's real answer and is not asked again; neither are
// certificate problems (they do not go away) nor a request that hit its
// deadline (a server that hangs would only hang again, multiplying the
// wait).
func retryableRead(method string, err error) bool {
	if !strings.EqualFold(method, http.MethodGet) {
		return false
	}
	var ce *CertError
	var de *DeadlineError
	if errors.As(err, &ce) || errors.As(err, &de) {
		return false
	}
	var te *transportError
	if errors.As(err, &te) {
		return true
	}
	var ae *APIError
	if errors.As(err, &ae) {
		switch ae.Status {
		case http.StatusInternalServerError:
			return !IsNotFound(ae)
		case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout, 595, 596, 597, 599:
			return true
		}
	}
	return false
}

// mayHaveReached reports whether a request that failed may still have been
// carried out by PVE: OutcomeUnknown.
func mayHaveReached(err error) bool { return OutcomeUnknown(err) }

// OutcomeUnknown reports whether a write that failed may still have been
// carried out by PVE, because the answer does not prove that PVE refused
// it (docs/decisions.md "Outcome unknown"):
//   - no answer at all, or one cut short, after the request may have left
//     (a reset, a timeout; not a failed dial or TLS handshake);
//   - a gateway's or pveproxy's own failure: 502, 503, 504, 595–599 —
//     pveproxy answers those for a backend (pvedaemon, another node) that
//     it lost, which may have done the work all the same;
//   - a 500 that is not PVE's own error: PVE's API server puts every error
//     of a handler into its JSON envelope as "message" (pve-http-server
//     src/PVE/APIServer/Formatter/Standard.pm prepare_response_data) and
//     into the status line (AnyEvent.pm, HTTP::Response->new($status,
//     $message)), so a 500 with neither — an empty or HTML body and the
//     bare status text, which is also what that formatter writes for a
//     handler that died without a message — may have come from something
//     in front of PVE, or from a handler that died after its work: it says
//     nothing of what PVE did.
//
// A 500 with PVE's message ("unable to find storage…", a lock timeout), a
// 501 and every 4xx are PVE's refusal: nothing was done.
func OutcomeUnknown(err error) bool {
	var te *transportError
	if errors.As(err, &te) {
		return te.maybeSent
	}
	var ae *APIError
	if errors.As(err, &ae) {
		switch ae.Status {
		case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout, 595, 596, 597, 598, 599:
			return true
		case http.StatusInternalServerError:
			return ae.Bare
		}
	}
	return false
}

// DeadlineError is a request that got no (complete) answer in time.
type DeadlineError struct {
	// Phase is "response" (no status line and headers came) or "body"
	// (the answer began but did not finish).
	Phase   string
	Timeout time.Duration
}

func (e *DeadlineError) Error() string {
	if e.Phase == "body" {
		return fmt.Sprintf("the answer did not finish within %s", durfmt.Format(e.Timeout))
	}
	return fmt.Sprintf("no answer within %s", durfmt.Format(e.Timeout))
}

// IsTimeout reports whether err is a request that hit its deadline.
func IsTimeout(err error) bool {
	var de *DeadlineError
	return errors.As(err, &de)
}

// timeoutFor is the deadline of one request: uploads carry a file and get
// their own, longer one.
func (c *Client) timeoutFor(method, path string) time.Duration {
	if method == http.MethodPost && strings.HasSuffix(path, "/upload") {
		return c.cfg.uploadTimeout
	}
	return c.cfg.requestTimeout
}

// deadline arms a timer that cancels the request with a DeadlineError.
// stop disarms it and reports whether it had fired.
func deadline(cancel context.CancelCauseFunc, phase string, d time.Duration) (stop func() bool) {
	if d <= 0 {
		return func() bool { return false }
	}
	t := time.AfterFunc(d, func() { cancel(&DeadlineError{Phase: phase, Timeout: d}) })
	return func() bool { return !t.Stop() }
}

// deadlineCause replaces err by the request's DeadlineError when that is
// why it failed (the transport only says "context canceled").
func deadlineCause(ctx context.Context, err error) error {
	var de *DeadlineError
	if cause := context.Cause(ctx); errors.As(cause, &de) {
		return de
	}
	return err
}

// rawBody is a request body that is not a form: an upload's multipart.
// params then only name its text fields for the trace.
type rawBody struct {
	contentType string
	data        []byte
	// note is what the trace shows in place of the bytes.
	note string
}

func (c *Client) doOnce(ctx context.Context, method, path string, params url.Values, upload *rawBody) (*Response, error) {
	method = strings.ToUpper(method)
	if err := checkCall(method, path); err != nil {
		return nil, err
	}
	secrets := c.secretsOf(params)
	// The request's own ctx carries its deadlines: one for the status
	// line and headers, a fresh one of the same length for the body.
	rctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	timeout := c.timeoutFor(method, path)
	req, err := c.newRequest(rctx, method, path, params, upload)
	if err != nil {
		return nil, err
	}

	start := time.Now()
	note := ""
	if upload != nil {
		note = upload.note
	}
	c.traceRequest(req, params, secrets, note)
	stopHeaders := deadline(cancel, "response", timeout)
	resp, err := c.http.Do(req)
	stopHeaders()
	if err != nil {
		terr := c.transportError(method, path, deadlineCause(rctx, err))
		c.traceFailure(method, path, terr, time.Since(start))
		return nil, terr
	}
	defer resp.Body.Close()
	c.clock.observe(resp.Header.Get("Date"))
	stopBody := deadline(cancel, "body", timeout)
	// The answer is read into a pooled buffer: a plan reads one config
	// per guest, and nothing below keeps raw (the envelope's members and
	// every message are copies).
	buf := bodyPool.Get().(*bytes.Buffer)
	buf.Reset()
	defer putBody(buf)
	if n := resp.ContentLength; n > 0 && n <= maxResponse {
		buf.Grow(int(n) + bytes.MinRead) // ReadFrom wants MinRead free to see the end
	}
	_, err = buf.ReadFrom(io.LimitReader(resp.Body, maxResponse+1))
	raw := buf.Bytes()
	stopBody()
	if err != nil {
		err = deadlineCause(rctx, err)
		if !IsTimeout(err) {
			err = fmt.Errorf("reading the answer: %w", err)
		}
		terr := &transportError{method: method, path: path, err: err, maybeSent: true}
		c.traceFailure(method, path, terr, time.Since(start))
		return nil, terr
	}
	c.traceResponse(method, path, resp, raw, time.Since(start), secrets)
	if len(raw) > maxResponse {
		return nil, fmt.Errorf("%s %s: answer larger than %d bytes", method, path, maxResponse)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, newAPIError(method, path, resp, raw, secrets)
	}
	return decodeEnvelope(method, path, resp.StatusCode, raw)
}

// checkCall refuses a method doOnce does not send and a path that is not
// one under /api2/json (method is upper case).
func checkCall(method, path string) error {
	switch method {
	case http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete:
	default:
		return fmt.Errorf("%s %s: unsupported method", method, path)
	}
	if !strings.HasPrefix(path, "/") || strings.Contains(path, "//") || strings.ContainsAny(path, "?#") {
		return fmt.Errorf("%s %s: invalid API path (want /segment/…, relative to /api2/json, no empty segments)", method, path)
	}
	return nil
}

// newRequest builds doOnce's HTTP request on ctx: params go in the form
// body of a POST or PUT and in the query otherwise; an upload is the body
// in their place.
func (c *Client) newRequest(ctx context.Context, method, path string, params url.Values, upload *rawBody) (*http.Request, error) {
	target := c.base.String() + path
	var body io.Reader
	encoded := params.Encode()
	form := method == http.MethodPost || method == http.MethodPut
	switch {
	case upload != nil:
		// A *bytes.Reader gives the request its Content-Length: pveproxy
		// refuses chunked uploads.
		body = bytes.NewReader(upload.data)
	case form:
		body = strings.NewReader(encoded)
	case encoded != "":
		target += "?" + encoded
	}
	req, err := http.NewRequestWithContext(ctx, method, target, body)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	req.Header.Set("Accept", "application/json")
	if c.cfg.userAgent != "" {
		req.Header.Set("User-Agent", c.cfg.userAgent)
	}
	switch {
	case upload != nil:
		req.Header.Set("Content-Type", upload.contentType)
	case form:
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if c.cfg.tokenID != "" {
		req.Header.Set("Authorization", "PVEAPIToken="+c.cfg.tokenID+"="+c.cfg.tokenSecret)
	}
	return req, nil
}

// decodeEnvelope reads a 2xx answer's JSON envelope into a Response; an
// empty body is a Response with only its status. raw is not kept.
func decodeEnvelope(method, path string, status int, raw []byte) (*Response, error) {
	out := &Response{Status: status}
	if len(bytes.TrimSpace(raw)) == 0 {
		return out, nil
	}
	data, changes, total, err := envelopeMembers(raw)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %d answer is not a JSON envelope: %w", method, path, status, err)
	}
	// Copies: raw is a pooled buffer.
	out.Data, out.Changes = bytes.Clone(data), bytes.Clone(changes)
	if !isNull(total) {
		var n flexInt
		if err := json.Unmarshal(total, &n); err == nil {
			out.Total = int(n)
		}
	}
	return out, nil
}

// newAPIError reads PVE's error envelope. PVE also puts the message in the
// HTTP reason phrase, which is all there is when the body is empty.
func newAPIError(method, path string, resp *http.Response, raw []byte, secrets []string) *APIError {
	e := &APIError{Method: method, Path: path, Status: resp.StatusCode}
	var env struct {
		Message string                     `json:"message"`
		Errors  map[string]json.RawMessage `json:"errors"`
	}
	if json.Unmarshal(raw, &env) == nil {
		e.Message = strings.TrimSpace(env.Message)
		for k, v := range env.Errors {
			if e.Errors == nil {
				e.Errors = map[string]string{}
			}
			var s string
			if json.Unmarshal(v, &s) != nil {
				s = compactJSON(v)
			}
			e.Errors[k] = scrub(strings.TrimSpace(s), secrets)
		}
	}
	// PVE's own error carries its message in the envelope and in the
	// status line (OutcomeUnknown); a generic text in both is no one's.
	reason := strings.TrimSpace(strings.TrimPrefix(resp.Status, strconv.Itoa(resp.StatusCode)))
	generic := http.StatusText(resp.StatusCode)
	e.Bare = resp.StatusCode >= 500 && (e.Message == "" || e.Message == generic) && (reason == "" || reason == generic)
	if e.Message == "" && !json.Valid(raw) {
		// A plain-text answer from something that is not PVE's API (a
		// TLS server asked in plain HTTP says so in its body).
		if t := strings.TrimSpace(string(raw)); t != "" && len(t) < 200 && !strings.HasPrefix(t, "<") && !strings.Contains(t, "\n") {
			e.Message = t
		}
	}
	if e.Message == "" {
		e.Message = strings.TrimSpace(strings.TrimPrefix(resp.Status, strconv.Itoa(resp.StatusCode)))
	}
	if e.Message == "" {
		e.Message = http.StatusText(resp.StatusCode)
	}
	e.Message = scrub(e.Message, secrets)
	return e
}

// transportError is a request that got no HTTP answer.
type transportError struct {
	method, path string
	err          error
	// maybeSent is false only when the request certainly never reached PVE
	// (dial or TLS handshake failure), true when the outcome is unknown.
	maybeSent bool
}

func (e *transportError) Error() string { return fmt.Sprintf("%s %s: %v", e.method, e.path, e.err) }
func (e *transportError) Unwrap() error { return e.err }

func (c *Client) transportError(method, path string, err error) error {
	// url.Error would repeat the full URL, query included; the path is enough.
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	err = certError(err, c.base.Host)
	te := &transportError{method: method, path: path, err: err, maybeSent: true}
	var ce *CertError
	var oe *net.OpError
	var de *net.DNSError
	switch {
	case errors.As(err, &ce), errors.As(err, &de):
		te.maybeSent = false
	case errors.As(err, &oe) && oe.Op == "dial":
		te.maybeSent = false
	}
	return te
}

// bodyPool holds the buffers answers are read into (doOnce).
var bodyPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// putBody returns an answer's buffer to the pool, unless a big answer
// grew it (a pool of big buffers would hold their memory).
func putBody(b *bytes.Buffer) {
	if b.Cap() <= 1<<20 {
		bodyPool.Put(b)
	}
}

func isNull(raw json.RawMessage) bool {
	s := bytes.TrimSpace(raw) // no copy: a config's answer is read per guest
	return len(s) == 0 || string(s) == "null"
}

func compactJSON(raw json.RawMessage) string {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return string(raw)
	}
	return b.String()
}

// Sleep pauses for d, or until ctx ends (its error; at once for d <= 0):
// the wait between a client's retries, and between those of its callers.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
