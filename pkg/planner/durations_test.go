package planner

import (
	"strings"
	"testing"
	"time"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/pvectl/pvectl/pkg/runlock"
)

// TestDurationsInOneStyle: the planner's messages show durations the way
// internal/durfmt writes them (docs/decisions.md, "Durations in one
// style"): one decimal below 10s, whole seconds above.
func TestDurationsInOneStyle(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{&engine.BusyError{Address: "QemuVM/a", What: "vm 100 is locked", Hint: "wait", Waited: 2340 * time.Millisecond}, "(still, after waiting 2.3s)"},
		{&engine.BusyError{Address: "QemuVM/a", What: "vm 100 is locked", Hint: "wait", Waited: 12400 * time.Millisecond}, "(still, after waiting 12s)"},
		{&runlock.LockedError{Endpoint: "https://127.0.0.1:8006/api2/json", Holder: runlock.Info{Operation: "apply"}, Age: 3*time.Minute + 12600*time.Millisecond}, "(3m13s ago)"},
		{&runlock.LockedError{Endpoint: "https://127.0.0.1:8006/api2/json", Holder: runlock.Info{Operation: "apply"}, Age: 10 * time.Minute, Expired: 4*time.Minute + 5400*time.Millisecond},
			"held for 10m0s; its lease ran out 4m5s ago"},
	} {
		if got := c.err.Error(); !strings.Contains(got, c.want) {
			t.Errorf("%q lacks %q", got, c.want)
		}
	}
}
