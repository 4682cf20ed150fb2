package durfmt

import (
	"testing"
	"time"
)

func TestFormat(t *testing.T) {
	for _, c := range []struct {
		in   time.Duration
		want string
	}{
		{-3 * time.Second, "0s"},
		{0, "0s"},
		{400 * time.Microsecond, "0s"},
		{500 * time.Microsecond, "1ms"},
		{12 * time.Millisecond, "12ms"},
		{445*time.Millisecond + 400*time.Microsecond, "445ms"},
		{999*time.Millisecond + 600*time.Microsecond, "1s"},
		{time.Second, "1s"},
		{1340 * time.Millisecond, "1.3s"},
		{1350 * time.Millisecond, "1.4s"},
		{2 * time.Second, "2s"},
		{5100 * time.Millisecond, "5.1s"},
		{9949 * time.Millisecond, "9.9s"},
		{9950 * time.Millisecond, "10s"},
		{10 * time.Second, "10s"},
		{12400 * time.Millisecond, "12s"},
		{12500 * time.Millisecond, "13s"},
		{59600 * time.Millisecond, "1m0s"},
		{90500 * time.Millisecond, "1m31s"},
		{180 * time.Second, "3m0s"},
		{3*time.Minute + 12*time.Second, "3m12s"},
		{time.Hour + 2*time.Minute + 3*time.Second + 400*time.Millisecond, "1h2m3s"},
		{26 * time.Hour, "26h0m0s"},
	} {
		got := Format(c.in)
		if got != c.want {
			t.Errorf("Format(%v) = %q, want %q", c.in, got, c.want)
		}
		if back, err := time.ParseDuration(got); err != nil || back != Round(c.in) {
			t.Errorf("Format(%v) = %q reads back as %v (%v), want %v", c.in, got, back, err, Round(c.in))
		}
	}
}
