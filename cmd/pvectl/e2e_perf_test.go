package main

import (
	"context"
	"encoding/json"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/pve/pvesim"
)

// `pvectl sim --state FILE` killed with SIGKILL in the middle of a load of
// creates never leaves a torn file: each time, the file is whole JSON the
// next simulator loads, and it keeps what earlier runs wrote (the state
// file is written atomically: temporary file, fsync, rename).
func TestE2ESimStateSurvivesKill(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state.json")
	listening := regexp.MustCompile(`listening on http://(127\.0\.0\.1:\d+)`)
	before := 0 // VMs the file held after the previous kill
	next := 1000
	for round := range 3 {
		env := &simEnv{t: t}
		run := env.startEnv([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()},
			"sim", "--listen", "127.0.0.1:0", "--state", state, "--task-duration", "1ms",
			"--token", e2eTokenID+"="+e2eTokenSecret)
		var addr string
		run.waitFor("the simulator to listen", func(stdout, _ string) bool {
			if m := listening.FindStringSubmatch(stdout); m != nil {
				addr = m[1]
				return true
			}
			return false
		})
		cl, err := pve.NewClient("http://"+addr, pve.WithToken(e2eTokenID, e2eTokenSecret), pve.WithTaskPolling(time.Millisecond, 5*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		// 8 workers create VMs until the process dies under them.
		ctx, cancel := context.WithCancel(context.Background())
		var created atomic.Int64
		var wg sync.WaitGroup
		ids := make(chan int)
		go func() {
			defer close(ids)
			for i := next; ; i++ {
				select {
				case ids <- i:
				case <-ctx.Done():
					return
				}
			}
		}()
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for id := range ids {
					err := cl.CreateQemu(ctx, "pve", url.Values{"vmid": {strconv.Itoa(id)}, "name": {"vm" + strconv.Itoa(id)},
						"memory": {"512"}, "scsi0": {"local-lvm:1"}, "net0": {"virtio,bridge=vmbr0"}})
					if err != nil {
						return // the kill
					}
					created.Add(1)
				}
			}()
		}
		// Kill it once it has made some VMs and written the file since
		// (bounded: ten seconds).
		for range 500 {
			if created.Load() >= 40 {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if created.Load() < 40 {
			t.Fatalf("round %d: only %d VMs created", round, created.Load())
		}
		time.Sleep(time.Duration(round*70) * time.Millisecond) // kill at different points of a write
		run.signal(syscall.SIGKILL)
		run.wait()
		cancel()
		wg.Wait()
		next += 10000

		b, err := os.ReadFile(state)
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			VMs map[string]json.RawMessage `json:"vms"`
		}
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatalf("round %d: the state file is torn: %v (%d bytes)", round, err, len(b))
		}
		if len(doc.VMs) < before {
			t.Errorf("round %d: the state file holds %d VMs, fewer than the %d of the last round: %v", round, len(doc.VMs), before, slices.Sorted(maps.Keys(doc.VMs)))
		}
		srv, err := pvesim.New(pvesim.Options{StateFile: state, TokenID: e2eTokenID, TokenSecret: e2eTokenSecret})
		if err != nil {
			t.Fatalf("round %d: the simulator cannot load the state file: %v", round, err)
		}
		if err := srv.Close(); err != nil {
			t.Fatal(err)
		}
		if left, _ := filepath.Glob(filepath.Join(filepath.Dir(state), ".state.json.*")); len(left) > 0 {
			t.Errorf("round %d: temporary files left after a restart: %v", round, left)
		}
		// What the next round starts from (creates the kill interrupted
		// were dropped on loading, as PVE drops nothing but the
		// simulator's tasks do not survive it).
		if b, err = os.ReadFile(state); err != nil {
			t.Fatal(err)
		}
		doc.VMs = nil // Unmarshal would merge into the old map
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		before = len(doc.VMs)
		t.Logf("round %d: %d VMs created before the kill, %d in the file", round, created.Load(), len(doc.VMs))
	}
}
