package secret

import (
	"io"
	"net/url"
	"slices"
	"strings"
	"sync"
)

// Redacted is what Scrub writes in place of a secret value.
const Redacted = "REDACTED"

// MinLen is the shortest value scrubbed as literal text: replacing every
// "1" of the output because a secret parameter happened to be that short
// would garble everything (name-based redaction still applies to it).
const MinLen = 4

// Scrub replaces every occurrence of the given secret values (and their
// URL-encoded forms, as a server may echo a form body) in s with Redacted.
// It is the one function pvectl uses to keep secrets out of what it
// prints: the client's errors, task exit statuses and logs, traces, and
// the CLI's output streams all pass through it.
func Scrub(s string, values []string) string {
	if s == "" || len(values) == 0 {
		return s
	}
	return scrubSorted(s, expand(values))
}

func scrubSorted(s string, sorted []string) string {
	for _, v := range sorted {
		if strings.Contains(s, v) {
			s = strings.ReplaceAll(s, v, Redacted)
		}
	}
	return s
}

// expand adds the encoded forms of values, drops short ones and sorts them
// longest first, so that a secret containing another is replaced whole.
func expand(values []string) []string {
	var out []string
	for _, v := range values {
		if len(v) < MinLen {
			continue
		}
		out = append(out, v)
		for _, enc := range []string{url.QueryEscape(v), url.PathEscape(v)} {
			if enc != v {
				out = append(out, enc)
			}
		}
	}
	slices.SortFunc(out, func(a, b string) int { return len(b) - len(a) })
	return slices.Compact(out)
}

// Scrubber holds the secret values known so far in one run (connection
// token secrets, private keys, secret spec values) and scrubs text with
// them. It is safe for concurrent use; values can be added as they become
// known (a Connection document is read after output has begun).
type Scrubber struct {
	mu     sync.RWMutex
	values []string // as given
	sorted []string // expanded, longest first
}

// NewScrubber returns a Scrubber knowing values.
func NewScrubber(values ...string) *Scrubber {
	s := &Scrubber{}
	s.Add(values...)
	return s
}

// Add makes values known; empty and too short ones are ignored. A nil
// Scrubber ignores them all.
func (s *Scrubber) Add(values ...string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, v := range values {
		if len(v) >= MinLen && !slices.Contains(s.values, v) {
			s.values = append(s.values, v)
		}
	}
	s.sorted = expand(s.values)
}

// Scrub is Scrub with the values known to s.
func (s *Scrubber) Scrub(text string) string {
	if s == nil {
		return text
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return scrubSorted(text, s.sorted)
}

// Writer returns a writer that scrubs every Write before passing it to w.
// Each Write is scrubbed whole: fmt.Fprint* write their formatted text in
// one call, so a secret inside one message is never split across writes.
func (s *Scrubber) Writer(w io.Writer) io.Writer { return &scrubWriter{w: w, s: s} }

type scrubWriter struct {
	w io.Writer
	s *Scrubber
}

func (sw *scrubWriter) Write(p []byte) (int, error) {
	out := sw.s.Scrub(string(p))
	if _, err := io.WriteString(sw.w, out); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Unwrap returns the writer underneath (for terminal checks).
func (sw *scrubWriter) Unwrap() io.Writer { return sw.w }
