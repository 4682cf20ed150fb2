package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
)

// verifyAll is Verify (api.go).
func verifyAll(ctx context.Context, clients Clients, plan *Plan) error {
	if err := CheckPlan(plan); err != nil {
		return err
	}
	if err := VerifyEndpoints(clients, plan); err != nil {
		// Re-reading another cluster would only add confusing errors.
		return err
	}
	// The changes are re-read DefaultReadConcurrency at a time, the lists
	// they share once (verifycache.go); errors keep the plan's order.
	ctx = withReadCache(ctx)
	errs := make([]error, len(plan.Changes))
	sem := make(chan struct{}, DefaultReadConcurrency)
	var wg sync.WaitGroup
	for i, c := range plan.Changes {
		if c.Action == NoOp || c.Action == ApplyNet || c.Action == Provision {
			continue
		}
		wg.Add(1)
		sem <- struct{}{} // a goroutine per slot, not per change
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := verifyChange(ctx, clients, c); err != nil {
				errs[i] = fmt.Errorf("%s: %w", c.Address, err)
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func verifyChange(ctx context.Context, clients Clients, c *Change) error {
	if c.Resource == nil {
		return errors.New("the plan holds no resource data: run plan again")
	}
	k, err := KindOf(c.Resource.Kind)
	if err != nil {
		return err
	}
	cl, err := clients.Client(c.Resource.Connection)
	if err != nil {
		return err
	}
	lo, err := k.Current(ctx, cl, c)
	if err != nil {
		return fmt.Errorf("re-read live state: %w", err)
	}
	switch {
	case c.Action == Create && lo.Exists:
		return errors.New("now exists, but the plan creates it: run plan again")
	case c.Action != Create && !lo.Exists:
		return fmt.Errorf("is gone, but the plan %ss it: run plan again", c.Action)
	case c.Action != Create && c.Fingerprint != "" && Fingerprint(lo) != c.Fingerprint,
		c.Action != Create && c.Fingerprint == "" && c.Digest != "" && lo.Digest != c.Digest:
		return errors.New("live configuration changed since the plan was made (digest differs): run plan again")
	}
	// What changed, if anything, is pvectl's own (a provisioning block):
	// the update must be made against the digest PVE has now.
	if c.Digest != "" {
		c.Digest = lo.Digest
	}
	return nil
}

// VerifyEndpoints refuses a plan whose connections now point at another API
// root than the one it was made against: PROXMOX_URL or a profile changed
// between `plan --out` and `apply FILE`, and the plan's vmids, digests and
// nodes describe the other cluster. A plan without recorded endpoints
// (made by a planner that did not record them) is not checked.
func VerifyEndpoints(clients Clients, plan *Plan) error {
	if plan.Endpoints == nil {
		return nil
	}
	var errs []error
	used := map[string]bool{}
	for _, c := range plan.Changes {
		if c.Resource != nil && c.Action != NoOp {
			used[c.Resource.Connection] = true
		}
	}
	for _, name := range slices.Sorted(maps.Keys(used)) {
		if _, ok := plan.Endpoints[name]; !ok {
			errs = append(errs, fmt.Errorf("%s: the plan does not record which cluster it was made against: run plan again", connLabel(name)))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(plan.Endpoints)) {
		want := plan.Endpoints[name]
		cl, err := clients.Client(name)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", connLabel(name), err))
			continue
		}
		if got := cl.BaseURL(); got != want {
			errs = append(errs, fmt.Errorf("%s: plan was made against %s, the connection now points at %s: run plan again", connLabel(name), want, got))
		}
	}
	return errors.Join(errs...)
}

// connLabel names a connection in messages.
func connLabel(name string) string {
	if name == "" {
		return "default connection"
	}
	return "connection " + name
}
