package pvesim

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestConfValueTyping pins GET …/config typing to the schema facts of the
// config update method: booleans and integers as JSON numbers, the rest
// as written.
func TestConfValueTyping(t *testing.T) {
	tests := []struct {
		name string
		kind *guestKind
		key  string
		val  string
		want any
	}{
		{"qemu boolean", qemuKind(), "onboot", "1", int64(1)},
		{"qemu integer", qemuKind(), "cores", "4", int64(4)},
		{"qemu number", qemuKind(), "cpulimit", "1.5", 1.5},
		{"qemu property string", qemuKind(), "memory", "2048", "2048"},
		{"qemu indexed family", qemuKind(), "net0", "virtio=BC:24:11:00:00:01", "virtio=BC:24:11:00:00:01"},
		{"qemu unknown key", qemuKind(), "lock", "create", "create"},
		{"qemu integer not parsing", qemuKind(), "cores", "x", "x"},
		{"lxc integer memory", lxcKind(), "memory", "512", int64(512)},
		{"lxc boolean", lxcKind(), "unprivileged", "1", int64(1)},
		{"lxc number", lxcKind(), "cpulimit", "2", 2.0},
		{"lxc string", lxcKind(), "hostname", "c1", "c1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.kind.confValue(tc.key, tc.val)); diff != "" {
				t.Errorf("confValue(%s, %s) (-want +got)\n%s", tc.key, tc.val, diff)
			}
		})
	}
}

// TestKindsHaveTheirFacts catches a guest kind built without a schema
// method or a strategy function.
func TestKindsHaveTheirFacts(t *testing.T) {
	for _, k := range []*guestKind{qemuKind(), lxcKind()} {
		t.Run(k.api, func(t *testing.T) {
			if k.config == nil || k.lockErr == nil || k.normalize == nil || k.normalizeNet == nil || k.mac == nil ||
				k.update == nil || k.description == nil || k.statusName == nil || k.digestMismatch == "" || k.cpus == nil || k.row == nil || k.status == nil || k.bridgeMissing == nil {
				t.Errorf("kind %s lacks a fact: %+v", k.api, k)
			}
		})
	}
}

func TestTagsCaseInsensitive(t *testing.T) {
	tests := []struct{ in, want string }{
		{"web;prod,a", "a;prod;web"},
		{"b;A;a;C", "A;b;C"},
		{"Zeta zeta alpha", "alpha;Zeta"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			if got := normalizeTags(tc.in); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
