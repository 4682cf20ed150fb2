package pve_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/pve/pvesim"
	"github.com/pvectl/pvectl/pkg/pve/pvesim/simtest"
)

// BenchmarkTaskNoticed measures how late WaitTask notices that a task
// ended, with the production poll schedule (250 ms fine steps, learned
// durations): power actions of a VM whose tasks take exactly 2 s in the
// simulator, alternately start and stop. ms-late is the median lag over
// the iterations (wait − 2 s); polls/task the status calls per task. The
// first task of each type is one the client has not seen yet.
func BenchmarkTaskNoticed(b *testing.B) {
	const task = 2 * time.Second
	for _, lat := range []time.Duration{0, 20 * time.Millisecond} {
		b.Run(fmt.Sprintf("task=2s/latency=%s", lat), func(b *testing.B) {
			s := simtest.Start(b, simtest.Options{
				Sim:           pvesim.Options{TaskDuration: task, Latency: lat},
				ClientOptions: []pve.Option{pve.WithTaskPolling(250*time.Millisecond, 2*time.Second)},
			})
			ctx := context.Background()
			if err := s.Client.CreateQemu(ctx, "pve", url.Values{"vmid": {"100"}, "name": {"bench"}, "memory": {"512"}}); err != nil {
				b.Fatal(err)
			}
			s.Requests.Reset()
			var lags []time.Duration
			b.ResetTimer()
			for i := range b.N {
				action := []string{"start", "stop"}[i%2]
				t0 := time.Now()
				upid, err := s.Client.StartTask(ctx, http.MethodPost, "/nodes/pve/qemu/100/status/"+action, nil)
				if err != nil {
					b.Fatal(err)
				}
				// The task started when PVE answered: half the round trip
				// before StartTask returned.
				started := t0.Add(time.Since(t0) / 2)
				if _, err := s.Client.WaitTask(ctx, upid); err != nil {
					b.Fatal(err)
				}
				lags = append(lags, time.Since(started)-task)
			}
			b.StopTimer()
			polls := 0
			for k, n := range s.Requests.Reset() {
				if strings.HasSuffix(k, "/status") && strings.HasPrefix(k, "GET /nodes/pve/tasks/") {
					polls += n
				}
			}
			slices.Sort(lags)
			b.ReportMetric(float64(lags[len(lags)/2])/float64(time.Millisecond), "ms-late")
			b.ReportMetric(float64(polls)/float64(b.N), "polls/task")
		})
	}
}
