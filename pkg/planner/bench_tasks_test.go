package planner

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/pve/pvesim"
	"github.com/pvectl/pvectl/pkg/pve/pvesim/simtest"
	"github.com/pvectl/pvectl/pkg/spec"
)

// The task benchmarks of issue 22: applies whose PVE tasks take a fixed
// time, with the production poll schedule (pve.DefaultPollMin ..
// DefaultPollMax), measured against the ideal ⌈N/P⌉ × task duration;
// x-ideal is the wall time over it. docs/performance.md has the figures.

// taskSim is a simulator whose tasks take task, with a client that polls
// as pvectl does.
func taskSim(b *testing.B, task time.Duration) (*simClients, *simtest.Sim) {
	b.Helper()
	s := simtest.Start(b, simtest.Options{
		Sim:           pvesim.Options{TokenID: simToken, TokenSecret: simSecret, TaskDuration: task, Seed: 1},
		ClientOptions: []pve.Option{pve.WithTaskPolling(pve.DefaultPollMin, pve.DefaultPollMax)},
	})
	return &simClients{cl: s.Client, conn: &spec.Connection{Nodes: []string{"pve"}}}, s
}

// stoppedVMs loads n stopped QemuVM documents (no disk: a create is one
// task), each with memory mem; chain makes each depend on the one before.
func stoppedVMs(b *testing.B, n, mem int, running, chain bool) *spec.Set {
	b.Helper()
	var sb strings.Builder
	for i := range n {
		if i > 0 {
			sb.WriteString("---\n")
		}
		fmt.Fprintf(&sb, "kind: QemuVM\nname: vm%d\n", i)
		if chain && i > 0 {
			fmt.Fprintf(&sb, "dependsOn: [QemuVM/vm%d]\n", i-1)
		}
		fmt.Fprintf(&sb, "spec:\n  vmid: %d\n  memory: %d\n  cores: 1\n  running: %v\n", 1000+i, mem, running)
	}
	return loadSpec(b, sb.String())
}

// applyTimed applies p and returns how long it took.
func applyTimed(b *testing.B, cl engine.Clients, p *engine.Plan, par int, hooks engine.Hooks) time.Duration {
	b.Helper()
	t0 := time.Now()
	res, err := engine.Apply(context.Background(), cl, p, engine.ApplyOptions{Parallelism: par, Hooks: hooks})
	if err != nil || len(res.Failed) > 0 {
		b.Fatalf("apply: %v %v", err, res.Failed)
	}
	return time.Since(t0)
}

func ideal(n, par int, task time.Duration) time.Duration {
	return time.Duration((n+par-1)/par) * task
}

func benchN(def int) int {
	if v, err := strconv.Atoi(os.Getenv("PVECTL_BENCH_N")); err == nil && v > 0 {
		return v
	}
	return def
}

// BenchmarkShortTasks: 200 creates of 50 ms tasks at --parallelism 16,
// and 200 memory updates at --parallelism 4 of stopped VMs (one
// synchronous PUT each: no task) and of running ones (a qmconfig task
// each). PVECTL_BENCH_N=2000 runs the 2,000 updates.
func BenchmarkShortTasks(b *testing.B) {
	const task = 50 * time.Millisecond
	n := benchN(200)
	b.Run(fmt.Sprintf("creates=%d/parallelism=16/task=50ms", n), func(b *testing.B) {
		var total time.Duration
		for range b.N {
			cl, _ := taskSim(b, task)
			p := planOnce(b, cl, stoppedVMs(b, n, 512, false, false))
			total += applyTimed(b, cl, p, 16, nil)
		}
		b.ReportMetric(float64(total)/float64(b.N)/float64(ideal(n, 16, task)), "x-ideal")
	})
	for _, running := range []bool{false, true} {
		b.Run(fmt.Sprintf("updates=%d/parallelism=4/task=50ms/running=%v", n, running), func(b *testing.B) {
			var total time.Duration
			calls := 0
			for range b.N {
				cl, s := taskSim(b, task)
				p := planOnce(b, cl, stoppedVMs(b, n, 512, running, false))
				applyTimed(b, cl, p, 32, nil)
				p = planOnce(b, cl, stoppedVMs(b, n, 1024, running, false))
				s.Requests.Reset()
				total += applyTimed(b, cl, p, 4, nil)
				calls += int(s.Requests.Total())
			}
			b.ReportMetric(float64(total)/float64(b.N)/float64(ideal(n, 4, task)), "x-ideal")
			b.ReportMetric(float64(calls)/float64(b.N*n), "calls/update")
		})
	}
}

// BenchmarkDependsOnChain: 40 VMs, each dependsOn the one before, 50 ms
// tasks: the ideal is 40 × 50 ms, every hand-over paying the lag.
func BenchmarkDependsOnChain(b *testing.B) {
	const task, n = 50 * time.Millisecond, 40
	var total time.Duration
	for range b.N {
		cl, _ := taskSim(b, task)
		p := planOnce(b, cl, stoppedVMs(b, n, 512, false, true))
		total += applyTimed(b, cl, p, 16, nil)
	}
	b.ReportMetric(float64(total)/float64(b.N)/float64(n*task), "x-ideal")
}

// lagHooks records, per task, the time from its wait's start to its end
// being noticed.
type lagHooks struct {
	engine.NopHooks
	mu    sync.Mutex
	start map[string]time.Time
	waits []time.Duration
}

func (h *lagHooks) Task(_ *engine.Change, ev pve.TaskEvent) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch ev.Phase {
	case pve.TaskWaiting:
		h.start[ev.UPID.Raw] = time.Now()
	case pve.TaskDone:
		if t0, ok := h.start[ev.UPID.Raw]; ok {
			h.waits = append(h.waits, time.Since(t0))
		}
	}
}

// BenchmarkTaskLag: an apply of 1,500 creates (one task each, 50 ms) at
// --parallelism 16: how late each task's end is noticed (its wait minus
// the task's duration; the wait starts when PVE answered the create, so a
// loaded simulator's late task ends count as lag too). PVECTL_BENCH_N
// changes the count.
func BenchmarkTaskLag(b *testing.B) {
	const task = 50 * time.Millisecond
	n := benchN(1500)
	h := &lagHooks{start: map[string]time.Time{}}
	var total time.Duration
	for range b.N {
		cl, s := taskSim(b, task)
		p := planOnce(b, cl, stoppedVMs(b, n, 512, false, false))
		s.Requests.Reset()
		total += applyTimed(b, cl, p, 16, h)
	}
	lags := make([]time.Duration, len(h.waits))
	for i, w := range h.waits {
		lags[i] = w - task
	}
	slices.Sort(lags)
	q := func(f float64) float64 { return float64(lags[int(f*float64(len(lags)-1))]) / float64(time.Millisecond) }
	b.ReportMetric(q(0.5), "ms-lag-p50")
	b.ReportMetric(q(0.95), "ms-lag-p95")
	b.ReportMetric(q(1), "ms-lag-max")
	b.ReportMetric(float64(total)/float64(b.N)/float64(ideal(n, 16, task)), "x-ideal")
}
