package main

import (
	"runtime/debug"
	"testing"
)

func TestDescribeVersion(t *testing.T) {
	vcs := &debug.BuildInfo{Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.time", Value: "2025-06-01T12:00:00Z"}}}
	for _, c := range []struct {
		name, v, commit, date string
		info                  *debug.BuildInfo
		want                  string
	}{
		{"release build", "v1.2.3", "fedcba9876543210", "2025-07-01T00:00:00Z", vcs, "v1.2.3 (commit fedcba987654, 2025-07-01T00:00:00Z)"},
		{"go install", "v1.2.3", "", "", &debug.BuildInfo{}, "v1.2.3"},
		{"local build", "dev-0123456789ab-dirty", "", "", vcs, "dev-0123456789ab-dirty (2025-06-01T12:00:00Z)"},
		{"commit only", "v1", "abc", "", nil, "v1 (commit abc)"},
		{"git describe", "v1.2.3-4-g0123456-dirty", "0123456789abcdef", "2025-07-01T00:00:00Z", nil, "v1.2.3-4-g0123456-dirty (2025-07-01T00:00:00Z)"},
		{"nothing", "dev", "", "", nil, "dev"},
	} {
		if got := describeVersion(c.v, c.commit, c.date, c.info); got != c.want {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
	}
}
