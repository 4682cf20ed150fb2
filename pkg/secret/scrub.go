package secret

import (
	"encoding/base64"
	"encoding/json"
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

// Scrub replaces every occurrence of the given secret values, and of every
// encoded form of them (see Forms), in s with Redacted.
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
		out = append(out, Forms(v)...)
	}
	slices.SortFunc(out, func(a, b string) int { return len(b) - len(a) })
	return slices.Compact(out)
}

// Forms are the ways v can appear in what pvectl prints: as it is; inside
// a JSON string (--json output, a PVE answer quoted in an error), with and
// without Go's HTML escaping of <, > and &; URL-encoded as a form body or
// query (space as +) and as a path segment (space as %20), as a server may
// echo a request; and base64-encoded (standard and URL alphabets, padded
// and raw), as HTTP Basic credentials and data blobs carry it. The same
// encodings of the JSON form cover a JSON document that was URL-encoded.
func Forms(v string) []string {
	forms := []string{v}
	add := func(f string) {
		if f != "" && !slices.Contains(forms, f) {
			forms = append(forms, f)
		}
	}
	add(jsonString(v, true))
	add(jsonString(v, false))
	for _, f := range slices.Clone(forms) {
		add(url.QueryEscape(f))
		add(url.PathEscape(f))
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
		add(enc.EncodeToString([]byte(v)))
	}
	return forms
}

// jsonString is v as it appears between the quotes of a JSON string.
func jsonString(v string, htmlEscape bool) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(htmlEscape)
	if err := enc.Encode(v); err != nil {
		return ""
	}
	s := strings.TrimSuffix(b.String(), "\n")
	return strings.TrimSuffix(strings.TrimPrefix(s, `"`), `"`)
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
