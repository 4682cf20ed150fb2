package planner

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"
)

// BenchmarkImport is issue 22's import row: `import --all` of 500 VMs
// with a simulated per-request latency, beside a no-op plan of the same
// VMs on the same simulator (the sub-benchmark "plan"). requests/op
// shows the one pass; x-bound is the time over the lower bound, which is
// the plan's: one round for the connection's lists (permissions,
// /cluster/resources, /nodes), one for the kinds' lists (read at once),
// and ⌈reads/16⌉ rounds of config reads (the 500 VMs, the seeded
// template and the node's DNS).
func BenchmarkImport(b *testing.B) {
	const n = 500
	for _, lat := range []time.Duration{0, 20 * time.Millisecond} {
		env := newBenchEnv(b, lat, time.Millisecond)
		set := vmSpecs(b, n)
		if _, err := engine.Apply(context.Background(), env.clients, planOnce(b, env.clients, set), engine.ApplyOptions{Parallelism: 16}); err != nil {
			b.Fatal(err)
		}
		bound := time.Duration(2+(n+2+engine.DefaultReadConcurrency-1)/engine.DefaultReadConcurrency) * lat
		report := func(b *testing.B) {
			b.ReportMetric(float64(env.requests.Total())/float64(b.N), "requests/op")
			if lat > 0 {
				b.ReportMetric(float64(b.Elapsed())/float64(b.N)/float64(bound), "x-bound")
			}
		}
		b.Run(fmt.Sprintf("vms=%d/latency=%s/import", n, lat), func(b *testing.B) {
			env.requests.Reset()
			for range b.N {
				res, err := engine.Import(context.Background(), env.clients, engine.ImportOptions{All: true})
				if err != nil || len(res.Problems) > 0 || len(res.Docs) < n {
					b.Fatalf("import: %v %v (%d documents)", err, res.Problems, len(res.Docs))
				}
			}
			report(b)
		})
		b.Run(fmt.Sprintf("vms=%d/latency=%s/plan", n, lat), func(b *testing.B) {
			env.requests.Reset()
			for range b.N {
				if p := planOnce(b, env.clients, set); p.HasChanges() {
					b.Fatal("plan after apply has changes")
				}
			}
			report(b)
		})
	}
}
