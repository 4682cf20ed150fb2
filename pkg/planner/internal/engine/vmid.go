package engine

import (
	"context"
	"fmt"
	"strconv"
	"sync"

	"github.com/pvectl/pvectl/internal/lazyre"
	"github.com/pvectl/pvectl/pkg/pve"
)

// vmids hands out the vmids of one apply's new guests on one connection.
// PVE cannot reserve a vmid: GET /cluster/nextid names the lowest free
// one, and every worker that asks before the first create lands hears the
// same answer (pve-manager API2/Cluster.pm nextid). One allocator per
// connection makes the workers of an apply take distinct ids; an id that
// another client took meanwhile (the create or clone says it exists) is
// marked and the next free one taken.
type vmids struct {
	mu sync.Mutex
	// skip are ids not to hand out: pinned by the plan's guests, handed
	// out already, or found taken.
	skip map[int]bool
}

func NewVMIDs(pinned map[int]bool) *vmids {
	skip := map[int]bool{}
	for id := range pinned {
		skip[id] = true
	}
	return &vmids{skip: skip}
}

// vmidSearch bounds how far past /cluster/nextid's answer next looks.
const vmidSearch = 10000

// Next returns a vmid no other worker of the apply gets: nextid's answer
// when it is not handed out yet, else the next id that PVE says is free
// (GET /cluster/nextid?vmid=N). Callers are serialised: the answers are
// only true until the next create.
func (a *vmids) Next(ctx context.Context, cl *pve.Client) (int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	id, err := cl.NextID(ctx)
	if err != nil {
		return 0, err
	}
	for n := 0; n < vmidSearch; n, id = n+1, id+1 {
		if a.skip[id] {
			continue
		}
		if n > 0 {
			free, err := cl.VMIDFree(ctx, id)
			if err != nil {
				return 0, err
			}
			if !free {
				a.skip[id] = true
				continue
			}
		}
		a.skip[id] = true
		return id, nil
	}
	return 0, fmt.Errorf("no free vmid among the %d after the one /cluster/nextid named", vmidSearch)
}

// vmidTakenRe is PVE's answer to a create or clone whose vmid another
// client took first: qemu-server and pve-container check_vmid_unused
// ("VM 105 already exists on node 'pve'", "CT 105 already exists…"), and
// clone_vm's config file check ("unable to create VM 105: config file
// already exists"), before or inside the worker.
var vmidTakenRe = lazyre.New(`\b(?:VM|CT) (\d+) already exists|unable to create (?:VM|CT) (\d+): config file already exists`)

// vmidTaken reports whether err says that vmid is taken.
func VMIDTaken(err error, vmid int) bool {
	if err == nil {
		return false
	}
	for _, m := range vmidTakenRe.FindAllStringSubmatch(err.Error(), -1) {
		for _, g := range m[1:] {
			if g == strconv.Itoa(vmid) {
				return true
			}
		}
	}
	return false
}

// maxVMIDCollisions bounds how often one create finds its vmid taken by
// another client. Each collision is a guest that appeared meanwhile, so
// the bound is far above what contending clients produce.
const maxVMIDCollisions = 1000

// WithNewVMID runs try with the vmid the change gets: fixed when it is
// set, else one from the apply's allocator, again with the next free one
// each time another client took it first.
func WithNewVMID(ctx context.Context, x *Execution, fixed int, noun string, try func(vmid int) error) (int, error) {
	if fixed != 0 {
		return fixed, try(fixed)
	}
	alloc := x.vmids
	if alloc == nil {
		alloc = NewVMIDs(nil) // a lone change (tests): an allocator of its own
	}
	for collisions := 0; ; collisions++ {
		vmid, err := alloc.Next(ctx, x.Client)
		if err != nil {
			return 0, fmt.Errorf("next free vmid: %w", err)
		}
		err = try(vmid)
		if !VMIDTaken(err, vmid) || collisions >= maxVMIDCollisions {
			return vmid, err
		}
		x.Msg("vmid %d was taken by another client meanwhile: taking the next free one for the %s", vmid, noun)
	}
}
