package simtest

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"time"
)

// AmbiguousFaults are the answers that do not prove PVE refused a write:
// a bare 500 (no PVE message), the gateway and pveproxy statuses, a reset
// connection and no answer at all (the client's request timeout).
var AmbiguousFaults = []string{"500", "502", "503", "504", "595", "596", "599", "reset", "timeout"}

// CarriedOut is a fault injector for Options.Wrap: the first request that
// match accepts is carried out by the simulator, and its answer replaced
// by Fault — a status (answered with an empty JSON envelope and the bare
// status text, as a proxy in front of PVE answers), "reset" (the
// connection drops) or "timeout" (no answer until the client gives up).
// Later requests pass untouched.
type CarriedOut struct {
	Fault string
	Match func(r *http.Request, form []byte) bool

	mu    sync.Mutex
	fired int
	seen  int // matching requests, faulted or not
}

// maxHold bounds how long a "timeout" fault holds a request when the
// client does not give up.
const maxHold = 10 * time.Second

// Fired reports how many requests got the fault (0 or 1).
func (f *CarriedOut) Fired() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.fired
}

// Seen reports how many requests matched.
func (f *CarriedOut) Seen() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.seen
}

// Wrap is the Options.Wrap function.
func (f *CarriedOut) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body)) // the simulator reads it again
		f.mu.Lock()
		hit := f.Match != nil && f.Match(r, body)
		if hit {
			f.seen++
		}
		fire := hit && f.fired == 0
		if fire {
			f.fired++
		}
		f.mu.Unlock()
		if !fire {
			next.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		next.ServeHTTP(rec, r.WithContext(context.WithoutCancel(r.Context())))
		Answer(w, r, f.Fault)
	})
}

// Answer answers r with fault instead of PVE's answer.
func Answer(w http.ResponseWriter, r *http.Request, fault string) {
	switch fault {
	case "reset":
		if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
			conn.Close()
		}
	case "timeout":
		select {
		case <-r.Context().Done():
		case <-time.After(maxHold):
		}
	default:
		status, err := strconv.Atoi(fault)
		if err != nil {
			status = http.StatusInternalServerError
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(`{"data":null}`))
	}
}
