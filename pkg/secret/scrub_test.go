package secret

import (
	"bytes"
	"fmt"
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
