package runlock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

// Checks that come while a read is in flight share the next read, sent
// after it: never the answer of a read sent before they asked.
func TestFreshReadSharesOnlyLaterReads(t *testing.T) {
	var f freshRead
	var mu sync.Mutex
	started := 0
	release := []chan struct{}{make(chan struct{}), make(chan struct{}), make(chan struct{})}
	read := func(context.Context) error {
		mu.Lock()
		started++
		n := started
		mu.Unlock()
		<-release[n-1]
		return fmt.Errorf("read %d", n)
	}
	ctx := context.Background()
	first := make(chan error, 1)
	go func() { first <- f.do(ctx, read) }()
	waitFor(t, func() bool { mu.Lock(); defer mu.Unlock(); return started == 1 })
	// Three checks while read 1 is in flight: they share read 2.
	later := make(chan error, 3)
	for range 3 {
		go func() { later <- f.do(ctx, read) }()
	}
	waitFor(t, func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.next != nil
	})
	time.Sleep(10 * time.Millisecond) // let the other two join
	close(release[0])
	if err := <-first; err == nil || err.Error() != "read 1" {
		t.Fatalf("the first check got %v, want read 1", err)
	}
	close(release[1])
	for range 3 {
		if err := <-later; err == nil || err.Error() != "read 2" {
			t.Errorf("a later check got %v, want read 2 (sent after it asked)", err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if started != 2 {
		t.Errorf("%d reads for 4 checks, want 2", started)
	}
}

// A check whose sharer's context ended reads for itself.
func TestFreshReadSharerCancelled(t *testing.T) {
	var f freshRead
	block := make(chan struct{})
	reads := 0
	var mu sync.Mutex
	read := func(ctx context.Context) error {
		mu.Lock()
		reads++
		n := reads
		mu.Unlock()
		if n == 1 {
			<-block
			return nil
		}
		return ctx.Err()
	}
	go func() { _ = f.do(context.Background(), read) }()
	waitFor(t, func() bool { mu.Lock(); defer mu.Unlock(); return reads == 1 })
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	leader := make(chan error, 1)
	go func() { leader <- f.do(cancelled, read) }() // becomes the next read, with an ended context
	waitFor(t, func() bool { f.mu.Lock(); defer f.mu.Unlock(); return f.next != nil })
	follower := make(chan error, 1)
	go func() { follower <- f.do(context.Background(), read) }()
	time.Sleep(10 * time.Millisecond)
	close(block)
	if err := <-leader; !errors.Is(err, context.Canceled) {
		t.Errorf("the cancelled check got %v", err)
	}
	if err := <-follower; err != nil {
		t.Errorf("the follower got %v, want its own read's answer", err)
	}
	if err := (*freshRead)(nil).do(context.Background(), func(context.Context) error { return nil }); err != nil {
		t.Errorf("nil freshRead: %v", err)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for range 500 { // bounded: 5 s
		if cond() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("timed out")
}
