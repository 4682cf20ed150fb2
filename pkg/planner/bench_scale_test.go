package planner

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pvectl/pvectl/pkg/pve/pvesim"
	"github.com/pvectl/pvectl/pkg/pve/pvesim/simtest"
	"github.com/pvectl/pvectl/pkg/spec"
)

// scaleEnv is the opt-in of the scale benchmarks: the VM counts to plan
// (PVECTL_BENCH_SCALE=5000,50000). They take minutes and a few GB.
const scaleEnv = "PVECTL_BENCH_SCALE"

// scaleState writes a simulator state file holding n VMs like manyVMs's
// (vm0…, vmid 1000…): one made through the API, copied with its name and
// MAC address changed, so that a plan of manyVMs(n) is a no-op.
func scaleState(b *testing.B, n int) string {
	b.Helper()
	path := b.TempDir() + "/state.json"
	s := simtest.Start(b, simtest.Options{Sim: pvesim.Options{TokenID: simToken, TokenSecret: simSecret, TaskDuration: time.Millisecond, Seed: 1, StateFile: path}})
	if err := s.Client.CreateQemu(context.Background(), "pve", url.Values{
		"vmid": {"1000"}, "name": {"vm0"}, "memory": {"512"}, "cores": {"1"}, "net0": {"virtio,bridge=vmbr0"},
	}); err != nil {
		b.Fatal(err)
	}
	if err := s.Server.Close(); err != nil {
		b.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	var st map[string]json.RawMessage
	if err := json.Unmarshal(raw, &st); err != nil {
		b.Fatal(err)
	}
	var vms map[string]map[string]any
	if err := json.Unmarshal(st["vms"], &vms); err != nil {
		b.Fatal(err)
	}
	tmpl := vms["1000"]
	conf := tmpl["conf"].(map[string]any)
	for i := range n {
		c := make(map[string]any, len(conf))
		for k, v := range conf {
			c[k] = v
		}
		c["name"] = fmt.Sprintf("vm%d", i)
		c["net0"] = fmt.Sprintf("virtio=BC:24:12:%02X:%02X:%02X,bridge=vmbr0", i>>16&0xff, i>>8&0xff, i&0xff)
		v := map[string]any{}
		for k, x := range tmpl {
			v[k] = x
		}
		v["vmid"], v["conf"] = 1000+i, c
		vms[strconv.Itoa(1000+i)] = v
	}
	if st["vms"], err = json.Marshal(vms); err != nil {
		b.Fatal(err)
	}
	if raw, err = json.Marshal(st); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		b.Fatal(err)
	}
	return path
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BenchmarkPlanScale plans N existing VMs (a no-op) against the simulator
// in the same process, N from PVECTL_BENCH_SCALE (e.g. 5000,50000):
// cpu-µs/vm is the process's CPU per VM (pvectl's and the simulator's),
// sim-KB/vm the simulator's live heap per VM, plan-KB/vm the live heap
// the loaded specs and the plan hold per VM, alloc-KB/vm what a plan
// allocates per VM. The CPU exponent between two sizes is
// log(cpu₂/cpu₁)/log(N₂/N₁) (docs/performance.md).
func BenchmarkPlanScale(b *testing.B) {
	sizes := os.Getenv(scaleEnv)
	if sizes == "" {
		b.Skipf("set %s=5000,50000 to run", scaleEnv)
	}
	for _, f := range strings.Split(sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			b.Fatalf("%s: %q is not a count", scaleEnv, f)
		}
		b.Run(fmt.Sprintf("vms=%d", n), func(b *testing.B) { planScale(b, n) })
	}
}

func planScale(b *testing.B, n int) {
	path := scaleState(b, n)
	base := heapInUse()
	s := simtest.Start(b, simtest.Options{Sim: pvesim.Options{TokenID: simToken, TokenSecret: simSecret, TaskDuration: time.Millisecond, Seed: 1, StateFile: path}})
	simHeap := heapInUse() - base
	cl := &simClients{cl: s.Client, conn: &spec.Connection{Nodes: []string{"pve"}}}
	base = heapInUse()
	set := manyVMs(b, n)
	var cpu time.Duration
	var alloc uint64
	var live uint64
	b.ResetTimer()
	for range b.N {
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		c0 := cpuTime()
		p := planOnce(b, cl, set)
		cpu += cpuTime() - c0
		runtime.ReadMemStats(&m1)
		alloc += m1.TotalAlloc - m0.TotalAlloc
		if p.HasChanges() {
			b.Fatal("the plan has changes")
		}
		live = heapInUse() - base
		runtime.KeepAlive(p)
	}
	b.StopTimer()
	runtime.KeepAlive(set)
	per := func(x float64) float64 { return x / float64(b.N) / float64(n) }
	b.ReportMetric(per(float64(cpu.Microseconds())), "cpu-µs/vm")
	b.ReportMetric(float64(simHeap)/float64(n)/1024, "sim-KB/vm")
	b.ReportMetric(float64(live)/float64(n)/1024, "plan-KB/vm")
	b.ReportMetric(per(float64(alloc))/1024, "alloc-KB/vm")
	b.ReportMetric(math.Round(float64(simHeap)/(1<<20)), "sim-MiB")
}
