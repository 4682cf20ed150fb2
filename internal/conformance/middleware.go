package conformance

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/pvectl/pvectl/pkg/pve/schema"
)

// APIPrefix is where PVE serves its JSON API.
const APIPrefix = "/api2/json"

// Violation is one conformance problem seen by Middleware.
type Violation struct {
	Method, Path string // Path is relative to /api2/json
	Err          error
	Response     bool // the response broke the schema, not the request
}

// Middleware checks every /api2/json request that passes through and the
// response next writes for it, reporting each problem; traffic itself is
// not altered. Multipart uploads are checked by their query only.
func Middleware(c *Checker, next http.Handler, report func(Violation)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path, ok := strings.CutPrefix(r.URL.EscapedPath(), APIPrefix)
		if !ok {
			next.ServeHTTP(w, r)
			return
		}
		params, opts, err := requestParams(r)
		if err != nil {
			report(Violation{Method: r.Method, Path: path, Err: err})
		} else {
			for _, e := range c.request(r.Method, path, params, opts) {
				report(Violation{Method: r.Method, Path: path, Err: e})
			}
		}
		rec := &recorder{ResponseWriter: w}
		next.ServeHTTP(rec, r)
		status := rec.status
		if rec.hijacked {
			// An answer written on the hijacked connection (the
			// simulator's error answers, whose reason phrase net/http
			// cannot write) is read back from what went out.
			resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(rec.raw.Bytes())), r)
			if err != nil || resp.ContentLength == 0 || resp.Header.Get("Content-Length") == "" {
				return // nothing readable, or no body (a 401)
			}
			rec.body.Reset()
			if _, err := rec.body.ReadFrom(resp.Body); err != nil {
				return
			}
			status = resp.StatusCode
		}
		if status == 0 {
			status = http.StatusOK
		}
		for _, e := range c.Response(r.Method, path, status, rec.body.Bytes()) {
			report(Violation{Method: r.Method, Path: path, Err: e, Response: true})
		}
	})
}

// requestParams merges the query with a form or JSON body, putting the body
// back for the next handler.
func requestParams(r *http.Request) (url.Values, schema.CheckOptions, error) {
	params := url.Values{}
	for k, v := range r.URL.Query() {
		params[k] = append(params[k], v...)
	}
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if ct == "multipart/form-data" {
		return params, schema.CheckOptions{IgnoreRequired: true}, nil
	}
	if r.Body == nil || r.Body == http.NoBody {
		return params, schema.CheckOptions{}, nil
	}
	body, err := io.ReadAll(r.Body)
	r.Body.Close()
	r.Body = io.NopCloser(bytes.NewReader(body))
	if err != nil {
		return nil, schema.CheckOptions{}, err
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return params, schema.CheckOptions{}, nil
	}
	switch ct {
	case "application/json":
		if err := mergeJSON(params, body); err != nil {
			return nil, schema.CheckOptions{}, err
		}
	default: // PVE reads any other body as a form
		form, err := url.ParseQuery(string(body))
		if err != nil {
			return nil, schema.CheckOptions{}, errors.New("request body is not a valid form: " + err.Error())
		}
		for k, v := range form {
			params[k] = append(params[k], v...)
		}
	}
	return params, schema.CheckOptions{}, nil
}

// mergeJSON turns a JSON object body into wire values as PVE sees them.
func mergeJSON(params url.Values, body []byte) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var obj map[string]any
	if err := dec.Decode(&obj); err != nil {
		return errors.New("request body is not a JSON object")
	}
	for k, v := range obj {
		vals := []any{v}
		if arr, ok := v.([]any); ok {
			vals = arr
		}
		for _, x := range vals {
			params[k] = append(params[k], schema.FormValue(x))
		}
	}
	return nil
}

// recorder tees the response to the client and a buffer.
type recorder struct {
	http.ResponseWriter
	status   int
	body     bytes.Buffer
	raw      bytes.Buffer // what went out on a hijacked connection
	hijacked bool
}

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	r.body.Write(b)
	return r.ResponseWriter.Write(b)
}

func (r *recorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (r *recorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	h, ok := r.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, errors.New("conformance: underlying ResponseWriter cannot hijack")
	}
	conn, rw, err := h.Hijack()
	if err != nil {
		return nil, nil, err
	}
	r.hijacked = true
	// What the handler writes is kept too, to check the answer.
	if err := rw.Flush(); err != nil {
		return nil, nil, err
	}
	tee := bufio.NewWriter(io.MultiWriter(conn, &r.raw))
	return conn, bufio.NewReadWriter(rw.Reader, tee), nil
}

func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
