package main

import "testing"

// The collector's headroom stays generous for small heaps and near a
// constant for big ones, never below half the live heap.
func TestGCPercent(t *testing.T) {
	for _, c := range []struct {
		live uint64
		want int
	}{
		{0, 200},
		{8 << 20, 200},  // validate of 5,000 resources: as before
		{32 << 20, 200}, // the headroom is 64 MiB either way
		{64 << 20, 100}, // 64 MiB of headroom
		{100 << 20, 64}, // 64 MiB of headroom
		{128 << 20, 50}, // the floor
		{1 << 30, 50},   // never below half the live heap
	} {
		if got := gcPercent(c.live); got != c.want {
			t.Errorf("gcPercent(%d MiB) = %d, want %d", c.live>>20, got, c.want)
		}
	}
}
