package schema

import "testing"

// BenchmarkMatch resolves the concrete paths a plan and an apply send most.
func BenchmarkMatch(b *testing.B) {
	reqs := []struct{ method, path string }{
		{"GET", "/cluster/resources"},
		{"GET", "/nodes/pve/qemu/1000/config"},
		{"POST", "/nodes/pve/qemu/1000/config"},
		{"GET", "/nodes/pve/network"},
		{"GET", "/nodes/pve/tasks/UPID:pve:00001234:00005678:65000000:qmcreate:100:root@pam:/status"},
		{"DELETE", "/nodes/pve/storage/local/content/local:iso/noble.iso"},
		{"GET", "/version"},
	}
	t := Default()
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		r := reqs[i%len(reqs)]
		if _, _, ok := t.Match(r.method, r.path); !ok {
			b.Fatalf("no match for %s %s", r.method, r.path)
		}
	}
}
