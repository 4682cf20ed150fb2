package planner

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"
)

// Observe's deferred reads run conc at a time, and only conc goroutines
// exist for them at once: a goroutine per guest waiting for a slot was a
// stack each, ~100 MB of a 50,000-VM plan (docs/performance.md).
func TestLoadAllGoroutinesBounded(t *testing.T) {
	const n, conc = 2000, 4
	base := runtime.NumGoroutine()
	var mu sync.Mutex
	peak, running, maxRunning, loaded := 0, 0, 0, 0
	objs := map[string]*engine.LiveObj{}
	for i := range n {
		lo := &engine.LiveObj{}
		lo.Load = func(context.Context) error {
			mu.Lock()
			running++
			maxRunning = max(maxRunning, running)
			peak = max(peak, runtime.NumGoroutine()-base)
			mu.Unlock()
			runtime.Gosched()
			mu.Lock()
			running--
			loaded++
			mu.Unlock()
			if i == 7 {
				return fmt.Errorf("boom")
			}
			return nil
		}
		objs[fmt.Sprintf("QemuVM/vm%04d", i)] = lo
	}
	errs := engine.LoadAll(context.Background(), objs, conc)
	if loaded != n || len(errs) != 1 || errs["QemuVM/vm0007"] == nil {
		t.Fatalf("loaded %d of %d, errors %v", loaded, n, errs)
	}
	if maxRunning > conc {
		t.Errorf("%d loads ran at once, want at most %d", maxRunning, conc)
	}
	// conc goroutines, and what the runtime, the test binary and the
	// servers of earlier tests start or end meanwhile (the count is the
	// process's): one goroutine per object would be n.
	if slack := conc + 64; peak > slack {
		t.Errorf("%d goroutines more than before during the loads, want at most %d (one per object would be %d)", peak, slack, n)
	}
	for addr, lo := range objs {
		if lo.Load != nil {
			t.Fatalf("%s: load kept after it ran", addr)
		}
	}
}
