package secret

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"net/url"
	"strings"
	"testing"
)

func TestScrub(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		values []string
		want   string
	}{
		{"literal", "auth failed for s3cr3t-value", []string{"s3cr3t-value"}, "auth failed for REDACTED"},
		{"url encoded", "body: secret=a%2Bb%2Fc%3D%3D", []string{"a+b/c=="}, "body: secret=REDACTED"},
		{"path encoded", "GET /x/a+b%2Fc==", []string{"a+b/c=="}, "GET /x/REDACTED"},
		{"longest first", "abcdefgh", []string{"abcd", "abcdefgh"}, "REDACTED"},
		{"short values kept", "id 1 and 22", []string{"1", "22"}, "id 1 and 22"},
		{"every occurrence", "xx s3cret yy s3cret", []string{"s3cret"}, "xx REDACTED yy REDACTED"},
		{"nothing known", "plain", nil, "plain"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Scrub(tt.in, tt.values); got != tt.want {
				t.Errorf("Scrub(%q): got %q want %q", tt.in, got, tt.want)
			}
			if got := NewScrubber(tt.values...).Scrub(tt.in); got != tt.want {
				t.Errorf("Scrubber.Scrub(%q): got %q want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestScrubberWriter(t *testing.T) {
	s := NewScrubber()
	var buf bytes.Buffer
	w := s.Writer(&buf)
	fmt.Fprintf(w, "before: %s\n", "tok-123456")
	s.Add("tok-123456") // learnt later (a Connection document)
	n, err := fmt.Fprintf(w, "after: %s\n", "tok-123456")
	if err != nil || n != len("after: tok-123456\n") {
		t.Errorf("Write: got n=%d err=%v, want the caller's length and no error", n, err)
	}
	if got, want := buf.String(), "before: tok-123456\nafter: REDACTED\n"; got != want {
		t.Errorf("got %q want %q", got, want)
	}
	var nilS *Scrubber
	if got := nilS.Scrub("x"); got != "x" {
		t.Errorf("nil Scrubber: got %q", got)
	}
}

// TestScrubEncodings: a secret with JSON, HTML and URL metacharacters is
// removed in every form it can be printed in.
func TestScrubEncodings(t *testing.T) {
	const v = `tok"<>&\ x+/=?%`
	tests := map[string]string{
		"json":          `{"msg":"bad token tok\"\u003c\u003e\u0026\\ x+/=?%"}`,
		"json no html":  `{"msg":"bad token tok\"<>&\\ x+/=?%"}`,
		"query":         "secret=" + url.QueryEscape(v),
		"path":          "/x/" + url.PathEscape(v),
		"json in query": "d=" + url.QueryEscape(`"tok\"<>&\\ x+/=?%"`),
		"base64 std":    base64.StdEncoding.EncodeToString([]byte(v)),
		"base64 url":    base64.URLEncoding.EncodeToString([]byte(v)),
		"base64 raw":    base64.RawStdEncoding.EncodeToString([]byte(v)),
		"base64 rawurl": base64.RawURLEncoding.EncodeToString([]byte(v)),
	}
	for name, text := range tests {
		t.Run(name, func(t *testing.T) {
			got := NewScrubber(v).Scrub(text)
			if !strings.Contains(got, Redacted) {
				t.Errorf("Scrub(%q) = %q: want the secret redacted", text, got)
			}
			for _, f := range Forms(v) {
				if strings.Contains(got, f) {
					t.Errorf("Scrub(%q) = %q: still holds form %q", text, got, f)
				}
			}
		})
	}
	pem := "-----BEGIN KEY-----\nAAAAB3NzaC1yc2EAAAADAQAB\n-----END KEY-----\n"
	if got := Scrub(`{"key":"`+jsonString(pem, true)+`"}`, []string{pem}); strings.Contains(got, "AAAAB3") {
		t.Errorf("a multi-line secret in JSON: got %q", got)
	}
}
