package planner

import (
	"context"
	"errors"
	"fmt"
)

// Verify re-reads live state for a saved plan and refuses it (error naming
// the resource) if any recorded config digest changed since it was made, an
// object to create now exists, or an object to update or delete is gone.
func Verify(ctx context.Context, clients Clients, plan *Plan) error {
	if err := checkPlan(plan); err != nil {
		return err
	}
	var errs []error
	for _, c := range plan.Changes {
		if c.Action == NoOp || c.Action == ApplyNet || c.Action == Provision {
			continue
		}
		if err := verifyChange(ctx, clients, c); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", c.Address, err))
		}
	}
	return errors.Join(errs...)
}

func verifyChange(ctx context.Context, clients Clients, c *Change) error {
	if c.Resource == nil {
		return errors.New("the plan holds no resource data: run plan again")
	}
	k, err := kindOf(c.Resource.Kind)
	if err != nil {
		return err
	}
	cl, err := clients.Client(c.Resource.Connection)
	if err != nil {
		return err
	}
	lo, err := k.current(ctx, cl, c)
	if err != nil {
		return fmt.Errorf("re-read live state: %w", err)
	}
	switch {
	case c.Action == Create && lo.Exists:
		return errors.New("now exists, but the plan creates it: run plan again")
	case c.Action != Create && !lo.Exists:
		return fmt.Errorf("is gone, but the plan %ss it: run plan again", c.Action)
	case c.Action != Create && c.Digest != "" && lo.Digest != c.Digest:
		return errors.New("live configuration changed since the plan was made (digest differs): run plan again")
	}
	return nil
}
