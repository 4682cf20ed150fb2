package engine

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/pvectl/pvectl/internal/lazyre"
	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/pve/schema"
	"github.com/pvectl/pvectl/pkg/spec"
)

// The engine's half of "outcome unknown" (docs/decisions.md). A create
// whose answer does not prove that PVE refused it (pve.OutcomeUnknown: no
// answer, a gateway's or pveproxy's 5xx, a 500 without PVE's message) may
// have been carried out. Before anything is sent again, the engine reads
// the object back with the kind's own current (what Verify uses) and
// decides it with the kind's own compare, as the next plan would:
//   - absent: PVE did not make it; the create is sent again (at most
//     createSends in all);
//   - there and as the spec wants it: PVE made it; it is adopted;
//   - there with fields still to set (a create that is two calls, the
//     second never sent): it is adopted and updated, as the next apply
//     would;
//   - anything else is an error that names what differs.
//
// The object did not exist when the plan was made and apply holds the
// run lock, so an object of the very id pvectl just sent is its own: PVE's
// "already exists" after an unsure send is looked up the same way, never
// taken for another client's. Guests (kinds that claim vmids) are found by
// their vmid and task in the request path instead (pkg/pve createretry.go,
// cloneretry.go): a name is not an identity. A kind whose object holds
// what only the create's answer carried (an API token's secret) is an
// adopter.

// adopter kinds finish adopting an object whose create answer was lost
// (a token regenerates the secret that answer carried).
type adopter interface {
	Adopt(ctx context.Context, x *Execution, c *Change) error
}

// createSends bounds how often one create is sent.
const CreateSends = 3

// createPause is the first pause before a create is sent again.
const CreatePause = 200 * time.Millisecond

// landing is what reading back an unsure create found.
type landing int

const (
	landedAbsent landing = iota
	landedAsSent         // there, as the spec wants it
	landedPartly         // there, with fields still to update (probe holds the update)
)

// createChecked is the engine's create: k.create, with every unsure
// outcome read back before anything is sent again.
func createChecked(ctx context.Context, k KindOps, x *Execution, c *Change) error {
	if k.Traits().ClaimsVMID { // keyed by its vmid instead (pkg/pve createretry.go)
		return k.Create(ctx, x, c)
	}
	unsure := false
	for attempt := 1; ; attempt++ {
		err := k.Create(ctx, x, c)
		if err == nil || ctx.Err() != nil {
			return err
		}
		refused := false
		switch {
		case pve.OutcomeUnknown(err):
			unsure = true
		case unsure && AlreadyExists(err):
		case handlerDied(err):
			// PVE's message, so a refusal by the rule; but a handler can
			// die after its work too (pve-http-server AnyEvent.pm answers
			// any error of the call with a 500): looked at, never resent.
			refused = true
		default:
			return err
		}
		got, probe, perr := readBack(ctx, k, x, c)
		if perr != nil {
			return fmt.Errorf("%w (outcome unknown: reading %s back failed too: %v)", err, ObjectName(k, c), perr)
		}
		if got != landedAbsent {
			return adoptCreated(ctx, k, x, c, got, probe, err)
		}
		if refused {
			return err
		}
		if !pve.OutcomeUnknown(err) || attempt >= CreateSends {
			return fmt.Errorf("%w (outcome unknown: sent %d times, %s is not there)", err, attempt, ObjectName(k, c))
		}
		x.Msg("%s got no usable answer (%s), and PVE has no %s: sending it again", pve.FailedRequest(err), pve.Brief(err), ObjectName(k, c))
		if serr := pve.Sleep(ctx, CreatePause<<(attempt-1)); serr != nil {
			return fmt.Errorf("%w (while retrying: %w)", err, serr)
		}
	}
}

// settled is the engine's update and delete: one whose answer does not
// prove PVE refused it is read back, and done when PVE did it (the
// object as the spec wants it; gone). It is not sent again: the next
// plan shows what is left.
func settled(ctx context.Context, k KindOps, x *Execution, c *Change, err error) error {
	if err == nil || ctx.Err() != nil || !pve.OutcomeUnknown(err) {
		return err
	}
	lo, rerr := k.Current(ctx, x.Client, c)
	if rerr != nil {
		return fmt.Errorf("%w (outcome unknown: reading %s back failed too: %v)", err, ObjectName(k, c), rerr)
	}
	done := false
	switch c.Action {
	case Delete:
		done = lo == nil || !lo.Exists
	case Update:
		if lo != nil && lo.Exists {
			probe := &Change{Address: c.Address, Node: c.Node, Resource: c.Resource, Digest: lo.Digest}
			done = k.Compare(probeBuilder(), c.Resource, lo, probe) == nil && probe.Action == NoOp
		}
	}
	if !done {
		return fmt.Errorf("%w (outcome unknown: %s does not show it done; the next plan shows what is left)", err, ObjectName(k, c))
	}
	x.Msg("%s got no usable answer (%s), but PVE did it", pve.FailedRequest(err), pve.Brief(err))
	return nil
}

// adoptCreated takes the object an unsure create made as this change's.
func adoptCreated(ctx context.Context, k KindOps, x *Execution, c *Change, got landing, probe *Change, cause error) error {
	x.Msg("%s got no usable answer (%s), but PVE made %s: adopted", pve.FailedRequest(cause), pve.Brief(cause), ObjectName(k, c))
	if a, ok := k.(adopter); ok {
		return a.Adopt(ctx, x, c)
	}
	if got == landedAsSent {
		return nil
	}
	x.Msg("%s still differs in %s: updating it", ObjectName(k, c), strings.Join(diffPaths(probe.Diff), ", "))
	if err := k.Update(ctx, x, probe); err != nil {
		return fmt.Errorf("%s was made, updating it failed: %w", ObjectName(k, c), err)
	}
	return nil
}

// readBack reads c's object as Verify does and compares it as a plan
// would. probe is the comparison's change (its update when landedPartly).
func readBack(ctx context.Context, k KindOps, x *Execution, c *Change) (landing, *Change, error) {
	lo, err := k.Current(ctx, x.Client, c)
	if err != nil {
		return landedAbsent, nil, err
	}
	if lo == nil || !lo.Exists {
		return landedAbsent, nil, nil
	}
	probe := &Change{Address: c.Address, Node: c.Node, Resource: c.Resource, Digest: lo.Digest}
	if lo.Node != "" {
		probe.Node = lo.Node
	}
	if err := k.Compare(probeBuilder(), c.Resource, lo, probe); err != nil {
		return landedAbsent, nil, fmt.Errorf("it exists, but comparing it failed: %w", err)
	}
	switch probe.Action {
	case NoOp:
		return landedAsSent, probe, nil
	case Update:
		return landedPartly, probe, nil
	}
	return landedAbsent, nil, fmt.Errorf("it exists, but differs from what was sent in %s beyond an update: not taken as this create's",
		strings.Join(diffPaths(probe.Diff), ", "))
}

// probeBuilder is the builder compare gets at apply time: the schema, and
// no specs or observations beside the object's own (the checks that look
// at other objects were made when the plan was).
func probeBuilder() *Builder {
	return &Builder{
		Set:     &spec.Set{},
		Obs:     &Observed{Conns: map[string]*LiveConn{}, Objs: map[string]*LiveObj{}, Errs: map[string]error{}},
		Table:   schema.Default(),
		Changes: map[string]*Change{},
		Failed:  map[string]error{},
	}
}

func diffPaths(d []FieldDiff) []string {
	out := make([]string, 0, len(d))
	for _, f := range d {
		out = append(out, f.Path)
	}
	return out
}

// handlerDied is a 500 with PVE's message that names no lasting reason
// (not a lock timeout, a missing object or a taken id).
func handlerDied(err error) bool {
	var ae *pve.APIError
	return errors.As(err, &ae) && ae.Status == http.StatusInternalServerError &&
		!pve.IsLockTimeout(err) && !pve.IsNotFound(err) && !AlreadyExists(err)
}

// alreadyExistsRe is PVE's refusal of a create whose id is taken:
// "pool 'x' already exists" (Pool.pm), "storage ID 'x' already defined"
// (pve-storage API2/Storage/Config.pm), "user 'x' already exists"
// (AccessControl), "Token already exists." (API2/User.pm),
// "interface already exists" (pve-manager API2/Network.pm), the last two
// as a parameter's error.
var alreadyExistsRe = lazyre.New(`(?i)already (?:exists|defined)`)

func AlreadyExists(err error) bool {
	var ae *pve.APIError
	if !errors.As(err, &ae) {
		return false
	}
	if alreadyExistsRe.MatchString(ae.Message) {
		return true
	}
	for _, m := range ae.Errors {
		if alreadyExistsRe.MatchString(m) {
			return true
		}
	}
	return false
}
