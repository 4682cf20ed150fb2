package spec

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
	"unsafe"
)

// smallDocs is at least size bytes of minimal documents (format takes the
// document's index), and how many there are.
func smallDocs(size int, format string) (string, int) {
	var b strings.Builder
	n := 0
	for b.Len() < size {
		fmt.Fprintf(&b, format, n)
		n++
	}
	return b.String(), n
}

const (
	smallPool = "---\nkind: Pool\nname: p%d\n"
	smallVM   = "---\nkind: QemuVM\nname: vm%d\nspec:\n  memory: 512\n  cores: 1\n"
)

// allocated is the bytes Load allocates for a file of n small documents.
func allocated(t *testing.T, format string, n int) uint64 {
	t.Helper()
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, format, i)
	}
	path := filepath.Join(t.TempDir(), "s.yaml")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	set, err := Load([]string{path}, LoadOptions{Getenv: env()})
	runtime.ReadMemStats(&after)
	if err != nil || len(set.Resources) != n {
		t.Fatalf("Load of %d documents: %v", n, err)
	}
	return after.TotalAlloc - before.TotalAlloc
}

// Memory grows linearly with the number of documents, a few KiB each
// (loosely bounded: the bound catches a quadratic step or a per-document
// copy of something big, not a few bytes more).
func TestLoadMemoryIsLinear(t *testing.T) {
	if testing.Short() {
		t.Skip("loads 30,000 documents")
	}
	allocated(t, smallPool, 10) // the schema facts, decoded once per process
	for _, format := range []string{smallPool, smallVM} {
		small, big := allocated(t, format, 5000), allocated(t, format, 10000)
		perDoc := big / 10000
		t.Logf("%q: %d B/document (5,000: %d MB, 10,000: %d MB)", format[4:16], perDoc, small>>20, big>>20)
		if big > small*5/2 {
			t.Errorf("%q: 10,000 documents allocate %d MB, 5,000 %d MB: not linear", format[4:16], big>>20, small>>20)
		}
		if perDoc > 8<<10 && !raceEnabled {
			t.Errorf("%q: %d bytes allocated per document, want at most 8 KiB", format[4:16], perDoc)
		}
	}
}

// What Load allocates per small document, garbage included: the
// collector's work (and so validate's CPU at a given headroom) follows it.
// A Pool was 4.2 KB and a small VM 6.2 KB before round 5, 3.4 and 5.5 KB
// after (go.yaml.in/yaml's node tree is ~1.5 KB of it); the bounds leave
// a tenth for noise and catch a per-document map or copy come back.
func TestLoadAllocationPerDocument(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("loads 20,000 documents; counts differ under -race")
	}
	allocated(t, smallPool, 10) // the schema facts, decoded once per process
	for _, c := range []struct {
		format string
		bound  uint64
	}{{smallPool, 3800}, {smallVM, 6100}} {
		const n = 10000
		perDoc := allocated(t, c.format, n) / n
		t.Logf("%q: %d B/document allocated", c.format[4:16], perDoc)
		if perDoc > c.bound {
			t.Errorf("%q: Load allocates %d bytes per document, want at most %d", c.format[4:16], perDoc, c.bound)
		}
	}
}

// The sizes a big spec is made of (docs/performance.md, "10 MB of small
// documents"): a Resource in the 192-byte size class (a field more moves it
// to 208 bytes for every resource: put rarely set fields in Rare, behind
// its pointer, instead), its Params a pointer, a key position in 32 bytes,
// a document's position kept for the duplicate check in 16.
func TestResourceSizes(t *testing.T) {
	for _, c := range []struct {
		what       string
		size, want uintptr
	}{
		{"spec.Resource", unsafe.Sizeof(Resource{}), 192},
		{"spec.Params (a resource's share)", unsafe.Sizeof(Resource{}.Params), 8},
		{"a KeyPositions entry", unsafe.Sizeof(keyPos{}), 32},
		{"a document's kept position", unsafe.Sizeof(filePos{}), 16},
	} {
		if c.size > c.want {
			t.Errorf("%s is %d bytes, want at most %d", c.what, c.size, c.want)
		}
	}
}

// Link indexes by value only the kinds that a rule of a kind in the specs
// names: 10 MB of Pools build no value index, VMs beside them index the
// pools (a VM's pool), and Resolve's index has every kind.
func TestRefIndexOnlyReferencedKinds(t *testing.T) {
	pool := func(name string) *Resource {
		return &Resource{Kind: "Pool", Name: name, State: Present, Params: ParamsOf(map[string]string{"poolid": name})}
	}
	pools := []*Resource{pool("a"), pool("b")}
	if ix := newRefIndex(pools, false); len(ix.byValue) != 0 || len(ix.byKind) != 1 {
		t.Errorf("pools alone: %d values, %d kinds indexed; want 0 and 1", len(ix.byValue), len(ix.byKind))
	}
	if ix := newRefIndex(pools, true); len(ix.byValue) != 2 {
		t.Errorf("pools for Resolve: %d values indexed, want 2", len(ix.byValue))
	}
	vm := &Resource{Kind: "QemuVM", Name: "vm", State: Present, Params: ParamsOf(map[string]string{"name": "vm", "pool": "b"})}
	ix := newRefIndex(append(pools, vm), false)
	if got := ix.byValue[refKey{"", "Pool", "b"}]; len(got) != 1 || got[0] != pools[1] {
		t.Errorf("a VM beside the pools: pool b indexed as %v", got)
	}
	if deps, _ := ix.deps(vm); len(deps) != 1 || deps[0] != (Ref{Kind: "Pool", Name: "b"}) {
		t.Errorf("the VM's dependencies: %v, want Pool/b", deps)
	}
}

// BenchmarkLoadSmallDocs is validate of 10 MiB of small documents (the
// issue's hostile-file case): peak heap and allocation per op, as
// docs/performance.md reports them.
func BenchmarkLoadSmallDocs(b *testing.B) {
	for _, c := range []struct{ name, format string }{{"pools", smallPool}, {"vms", smallVM}} {
		b.Run(c.name, func(b *testing.B) {
			data, n := smallDocs(10<<20, c.format)
			path := filepath.Join(b.TempDir(), "s.yaml")
			if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			var peak uint64
			for range b.N {
				runtime.GC()
				stop, done := make(chan struct{}), make(chan uint64)
				go samplePeak(stop, done)
				set, err := Load([]string{path}, LoadOptions{Getenv: env()})
				close(stop)
				peak = max(peak, <-done)
				if err != nil || len(set.Resources) != n {
					b.Fatalf("Load: %v", err)
				}
			}
			b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
			b.ReportMetric(float64(n), "docs")
		})
	}
}

// samplePeak reports the largest heap in use seen until stop closes.
func samplePeak(stop <-chan struct{}, done chan<- uint64) {
	var peak uint64
	var m runtime.MemStats
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		runtime.ReadMemStats(&m)
		peak = max(peak, m.HeapInuse)
		select {
		case <-stop:
			done <- peak
			return
		case <-tick.C:
		}
	}
}

// retained is the bytes the Set of n small documents keeps alive after
// Load (the heap after a collection, less the heap before).
func retained(t *testing.T, format string, n int) uint64 {
	t.Helper()
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, format, i)
	}
	path := filepath.Join(t.TempDir(), "s.yaml")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	set, err := Load([]string{path}, LoadOptions{Getenv: env()})
	runtime.GC()
	runtime.ReadMemStats(&after)
	if err != nil || len(set.Resources) != n {
		t.Fatalf("Load of %d documents: %v", n, err)
	}
	runtime.KeepAlive(set)
	return after.HeapAlloc - min(after.HeapAlloc, before.HeapAlloc)
}

// What a loaded resource keeps alive is what a big spec's peak is made of
// (docs/performance.md): a Pool about 370 bytes, a small VM about 520
// (740 and 830 before round 6, 770 and 900 before round 5), most of it
// the Resource itself (256). The bounds leave 4-5 % for noise; Params as
// a Go map again (+290 bytes), a kept dependency graph (+90), a map of
// positions per resource (+300), 48-byte key positions, a kind name or
// spec key copied per resource, or the documents' YAML trees kept, fail
// them.
func TestLoadRetainedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("loads 20,000 documents")
	}
	allocated(t, smallPool, 10) // the schema facts, decoded once per process
	for _, c := range []struct {
		format string
		bound  uint64
	}{{smallPool, 390}, {smallVM, 545}} {
		const n = 10000
		perDoc := retained(t, c.format, n) / n
		t.Logf("%q: %d B/document retained", c.format[4:16], perDoc)
		if perDoc > c.bound && !raceEnabled {
			t.Errorf("%q: a loaded document keeps %d bytes alive, want at most %d", c.format[4:16], perDoc, c.bound)
		}
	}
}
