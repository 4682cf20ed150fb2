package planner

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/pve/pvesim"
	"github.com/pvectl/pvectl/pkg/pve/pvesim/simtest"
	"github.com/pvectl/pvectl/pkg/spec"
)

// benchEnv is a simulator with a per-request latency, counting requests.
type benchEnv struct {
	clients  *simClients
	requests *simtest.Counter
}

func newBenchEnv(b *testing.B, latency, task time.Duration) *benchEnv {
	b.Helper()
	s := simtest.Start(b, simtest.Options{Sim: pvesim.Options{TokenID: simToken, TokenSecret: simSecret, TaskDuration: task, Latency: latency, Seed: 1}})
	return &benchEnv{clients: &simClients{cl: s.Client, conn: &spec.Connection{Nodes: []string{"pve"}}}, requests: s.Requests}
}

// vmSpecs writes n QemuVM documents (and a bridge with its NetworkApply
// every 50 VMs, so network reads are part of the picture).
func vmSpecs(b *testing.B, n int) *spec.Set {
	b.Helper()
	var docs []string
	for i := range n {
		docs = append(docs, fmt.Sprintf("kind: QemuVM\nname: vm%d\nspec:\n  vmid: %d\n  memory: 1024\n  cores: 2\n  scsi0: local-lvm:8\n  net0: virtio,bridge=vmbr0\n  tags: bench;pvectl\n", i, 1000+i))
	}
	return loadSpec(b, strings.Join(docs, "---\n"))
}

func planOnce(b *testing.B, cl engine.Clients, set *spec.Set) *engine.Plan {
	b.Helper()
	return planFor(b, cl, set, engine.Options{})
}

// planConverged applies set, then times plans of it, which must change
// nothing, and reports requests/op.
func (env *benchEnv) planConverged(b *testing.B, set *spec.Set) {
	b.Helper()
	if _, err := engine.Apply(context.Background(), env.clients, planOnce(b, env.clients, set), engine.ApplyOptions{Parallelism: 16}); err != nil {
		b.Fatal(err)
	}
	env.requests.Reset()
	b.ResetTimer()
	for range b.N {
		if p := planOnce(b, env.clients, set); p.HasChanges() {
			b.Fatalf("plan after apply has changes: %v", summary(p))
		}
	}
	b.ReportMetric(float64(env.requests.Total())/float64(b.N), "requests/op")
}

// BenchmarkPlan measures a whole plan (observe + build) of N existing VMs
// with a simulated per-request latency: the cost of `pvectl plan` on a
// converged cluster. requests/op shows the batching.
func BenchmarkPlan(b *testing.B) {
	for _, n := range []int{10, 100, 500} {
		for _, lat := range []time.Duration{0, 5 * time.Millisecond, 20 * time.Millisecond} {
			if lat == 20*time.Millisecond && n != 500 {
				continue // the row: 500 VMs at 20 ms
			}
			b.Run(fmt.Sprintf("vms=%d/latency=%s", n, lat), func(b *testing.B) {
				env := newBenchEnv(b, lat, time.Millisecond)
				env.planConverged(b, vmSpecs(b, n))
				if lat > 0 {
					// The lower bound: the lists (two rounds: permissions,
					// /cluster/resources and /nodes at once, then the node's
					// guest list) and ⌈N/16⌉ rounds of config reads.
					bound := time.Duration(2+(n+engine.DefaultReadConcurrency-1)/engine.DefaultReadConcurrency) * lat
					b.ReportMetric(float64(b.Elapsed())/float64(b.N)/float64(bound), "x-bound")
				}
			})
		}
	}
}

// BenchmarkApplyParallelism creates 32 VMs whose tasks each take 20ms of
// simulated PVE time: how --parallelism shortens an apply.
func BenchmarkApplyParallelism(b *testing.B) {
	for _, par := range []int{1, 4, 16} {
		b.Run(fmt.Sprintf("parallelism=%d", par), func(b *testing.B) {
			set := vmSpecs(b, 32)
			for range b.N {
				b.StopTimer()
				env := newBenchEnv(b, 0, 20*time.Millisecond)
				p := planOnce(b, env.clients, set)
				b.StartTimer()
				if _, err := engine.Apply(context.Background(), env.clients, p, engine.ApplyOptions{Parallelism: par}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkApplyCreates is the long creates' row: 16 VM creates at
// --parallelism 8, each PVE task taking 2 s, with the production task
// polling (taskpoll.go), without and with 30 % lock contention. The ideal is ⌈16/8⌉ × 2 s = 4 s; x-ideal is the time
// over it.
func BenchmarkApplyCreates(b *testing.B) {
	const task = 2 * time.Second
	for _, contention := range []float64{0, 0.3} {
		b.Run(fmt.Sprintf("creates=16/parallelism=8/contention=%.1f", contention), func(b *testing.B) {
			set := vmSpecs(b, 16)
			for range b.N {
				b.StopTimer()
				s := simtest.Start(b, simtest.Options{
					Sim: pvesim.Options{TokenID: simToken, TokenSecret: simSecret, TaskDuration: task, Seed: 1,
						LockContention: contention},
					ClientOptions: []pve.Option{pve.WithTaskPolling(pve.DefaultPollMin, pve.DefaultPollMax)},
				})
				env := &simClients{cl: s.Client, conn: &spec.Connection{Nodes: []string{"pve"}}}
				p := planOnce(b, env, set)
				b.StartTimer()
				res, err := engine.Apply(context.Background(), env, p, engine.ApplyOptions{Parallelism: 8})
				if err != nil || len(res.Failed) > 0 {
					b.Fatalf("apply: %v %v", err, res.Failed)
				}
			}
			ideal := 2 * task
			b.ReportMetric(float64(b.Elapsed())/float64(b.N)/float64(ideal), "x-ideal")
		})
	}
}
