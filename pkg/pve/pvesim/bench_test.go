package pvesim_test

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/pvectl/pvectl/pkg/pve/pvesim"
	"github.com/pvectl/pvectl/pkg/pve/pvesim/simtest"
)

// BenchmarkCreateVMs creates N VMs (a disk and a NIC each) through the
// client, 16 at a time, with and without a state file: the cost of the
// state file's writes and of the simulator's own bookkeeping as the
// cluster grows (MAC addresses, volumes, pools).
func BenchmarkCreateVMs(b *testing.B) {
	for _, n := range []int{500, 2000} {
		for _, withState := range []bool{false, true} {
			b.Run(fmt.Sprintf("vms=%d/state=%v", n, withState), func(b *testing.B) {
				for range b.N {
					b.StopTimer()
					opts := pvesim.Options{TaskDuration: time.Millisecond}
					if withState {
						opts.StateFile = filepath.Join(b.TempDir(), "state.json")
					}
					s := simtest.Start(b, simtest.Options{Sim: opts})
					b.StartTimer()
					createVMs(b, s, n, 16)
				}
			})
		}
	}
}

func createVMs(b *testing.B, s *simtest.Sim, n, par int) {
	ctx := context.Background()
	ids := make(chan int)
	var wg sync.WaitGroup
	errs := make(chan error, par)
	for range par {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for id := range ids {
				err := s.Client.CreateQemu(ctx, "pve", url.Values{"vmid": {strconv.Itoa(id)}, "name": {"vm" + strconv.Itoa(id)},
					"memory": {"512"}, "scsi0": {"local-lvm:1"}, "net0": {"virtio,bridge=vmbr0"}})
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for i := range n {
		select {
		case ids <- 1000 + i:
		case err := <-errs:
			close(ids)
			wg.Wait()
			b.Fatal(err)
		}
	}
	close(ids)
	wg.Wait()
	select {
	case err := <-errs:
		b.Fatal(err)
	default:
	}
}
