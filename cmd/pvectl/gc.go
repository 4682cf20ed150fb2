package main

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
)

// The collector's headroom (docs/performance.md, "memory"): a short-lived
// pvectl collects garbage at three times the live heap (GOGC=200) while the
// heap is small, which saves a tenth of validate's CPU; as the live heap
// grows, the headroom stays near gcHeadroom instead of growing with it,
// down to half the live heap (GOGC=50). So 50,000 resources or 10 MB of
// small documents peak near their live heap plus a constant, not at three
// times it.
const (
	gcHeadroom   = 64 << 20
	gcMaxPercent = 200
	gcMinPercent = 50
)

// gcPercent is the GOGC for a live heap of live bytes.
func gcPercent(live uint64) int {
	if live == 0 {
		return gcMaxPercent
	}
	return int(min(max(gcHeadroom*100/live, gcMinPercent), gcMaxPercent))
}

// gcSentinel is allocated unreachable so that its finalizer runs after
// the next collection (it holds a pointer: tiny pointer-free objects are
// batched and may never be finalized).
type gcSentinel struct {
	_ *int
	_ [3]uintptr
}

// tuneGC sets GOGC from the live heap after every collection. Each run of
// the finalizer arms the next, so it costs one small object per cycle.
func tuneGC() {
	debug.SetGCPercent(gcMaxPercent)
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	current := gcMaxPercent
	var arm func()
	arm = func() {
		runtime.SetFinalizer(&gcSentinel{}, func(*gcSentinel) {
			metrics.Read(sample)
			if sample[0].Value.Kind() == metrics.KindUint64 {
				if p := gcPercent(sample[0].Value.Uint64()); p != current {
					current = p
					debug.SetGCPercent(p)
				}
			}
			arm()
		})
	}
	arm()
}
