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
// ended, with the production poll schedule (taskpoll.go): power actions
// of a VM whose tasks take a fixed time in the simulator, alternately
// start and stop. ms-late is the median lag over the iterations (wait −
// task), ms-late-p95 the 95th percentile; polls/task the status calls per
// task. The first task of each type is one the client has not seen yet.
func BenchmarkTaskNoticed(b *testing.B) {
	for _, tc := range []struct{ task, lat time.Duration }{
		{30 * time.Millisecond, 0}, {50 * time.Millisecond, 0}, {2 * time.Second, 0}, {2 * time.Second, 20 * time.Millisecond},
	} {
		task, lat := tc.task, tc.lat
		b.Run(fmt.Sprintf("task=%s/latency=%s", task, lat), func(b *testing.B) {
			s := simtest.Start(b, simtest.Options{
				Sim:           pvesim.Options{TaskDuration: task, Latency: lat},
				ClientOptions: []pve.Option{pve.WithTaskPolling(pve.DefaultPollMin, pve.DefaultPollMax)},
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
			b.ReportMetric(float64(lags[(len(lags)-1)*95/100])/float64(time.Millisecond), "ms-late-p95")
			b.ReportMetric(float64(polls)/float64(b.N), "polls/task")
		})
	}
}
