package pvesim

import "testing"

// TestStatusLine checks the reason phrase as pve-http-server builds it
// (AnyEvent.pm response): the message's first line, the standard phrase
// for none, and a plain 400 for a reason holding a carriage return.
func TestStatusLine(t *testing.T) {
	tests := []struct {
		code     int
		msg      string
		wantCode int
		reason   string
		ok       bool
	}{
		{500, "storage 'x' does not exist\n", 500, "storage 'x' does not exist", true},
		{500, "first line\nsecond line\n", 500, "first line", true},
		{403, "", 403, "Forbidden", true},
		{500, "bad\rvalue\n", 400, "Bad Request", false},
		{596, "Connection timed out", 596, "Connection timed out", true},
	}
	for _, tc := range tests {
		code, reason, ok := statusLine(tc.code, tc.msg)
		if code != tc.wantCode || reason != tc.reason || ok != tc.ok {
			t.Errorf("statusLine(%d, %q) = %d %q %v, want %d %q %v", tc.code, tc.msg, code, reason, ok, tc.wantCode, tc.reason, tc.ok)
		}
	}
}
