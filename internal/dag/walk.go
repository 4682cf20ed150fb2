package dag

import (
	"context"
	"sync"
)

// Step is one vertex of a walk: its id, the ids it waits for, and whether
// it has work at all (an idle step completes at once, without a slot).
type Step struct {
	ID   string
	Deps []string
	Idle bool
}

// Walker runs steps in dependency order with bounded parallelism, as
// OpenTofu's internal/dag walks its graph: a step starts once every
// dependency is ready, holds one of Parallelism slots while it works, and
// a failure skips its transitive dependents. A closed Stop starts nothing
// new (running steps finish); a cancelled ctx also ends the running
// steps' waits.
//
// A step may have a late part (Late): its dependents start after Run, and
// the late part runs once they all finished without a failure (otherwise
// it is left out and Held says why). Done comes after the late part.
type Walker struct {
	Parallelism int
	Stop        <-chan struct{}

	// Run does a step's work.
	Run func(ctx context.Context, id string) error
	// Late gives the late part of a step that ran without error (nil:
	// none). Optional.
	Late func(id string) func(context.Context) error

	// Hooks, called from the step's goroutine; each optional.
	Start func(id string) // before Run
	// Done is called after Run (and the late part); it says whether an
	// error fails the step, skipping its dependents (nil Done: any error
	// does). An error that does not (an outcome left unknown by a
	// cancelled ctx) leaves the dependents to the stop.
	Done    func(id string, err error) (failed bool)
	Idle    func(id string)             // an idle step completed
	Skipped func(id, cause string)      // a dependency failed: cause is the failed id ("" when the walk was stopped)
	Held    func(id string, why string) // the late part was left out
}

// Walk runs the steps and returns the ids of those whose work succeeded
// (idle ones excluded) and whether the walk was stopped.
func (w *Walker) Walk(ctx context.Context, steps []Step) (succeeded map[string]bool, stopped bool) {
	par := w.Parallelism
	if par <= 0 {
		par = 1
	}
	wk := &walk{w: w, ctx: ctx, sem: make(chan struct{}, par), vs: map[string]*vertex{}, dependents: map[string][]*vertex{}, ok: map[string]bool{}}
	for _, s := range steps {
		wk.vs[s.ID] = &vertex{step: s, ready: make(chan struct{}), done: make(chan struct{})}
	}
	for _, s := range steps {
		for _, d := range s.Deps {
			if wk.vs[d] != nil {
				wk.dependents[d] = append(wk.dependents[d], wk.vs[s.ID])
			}
		}
	}
	var wg sync.WaitGroup
	for _, s := range steps {
		v := wk.vs[s.ID]
		wg.Add(1)
		go func() {
			defer wg.Done()
			wk.visit(v)
		}()
	}
	wg.Wait()
	return wk.ok, wk.stopped()
}

type vertex struct {
	step Step
	// ready closes when the step's dependents may start: when it is
	// finished, or, with a late part, when its first part is.
	ready chan struct{}
	// done closes when the step is finished, late part included.
	done    chan struct{}
	readied bool
	cause   string // the failed id that this step failed or was skipped for
	ok      bool   // finished without failing or being skipped
}

type walk struct {
	w          *Walker
	ctx        context.Context
	sem        chan struct{}
	vs         map[string]*vertex
	dependents map[string][]*vertex
	mu         sync.Mutex
	ok         map[string]bool
}

func (wk *walk) stopped() bool {
	select {
	case <-wk.w.Stop:
		return true
	default:
		return wk.ctx.Err() != nil
	}
}

// acquire takes a slot, or reports false when the walk was stopped.
func (wk *walk) acquire() bool {
	if wk.stopped() {
		return false
	}
	select {
	case wk.sem <- struct{}{}:
	case <-wk.w.Stop:
		return false
	case <-wk.ctx.Done():
		return false
	}
	if wk.stopped() {
		<-wk.sem
		return false
	}
	return true
}

func (v *vertex) release() {
	if !v.readied {
		v.readied = true
		close(v.ready)
	}
}

// visit runs one step once its dependencies are ready.
func (wk *walk) visit(v *vertex) {
	defer close(v.done)
	defer v.release()
	id := v.step.ID
	for _, d := range v.step.Deps {
		if dv := wk.vs[d]; dv != nil {
			<-dv.ready
			if dv.cause != "" && v.cause == "" {
				v.cause = dv.cause
			}
		}
	}
	switch {
	case v.cause != "":
		call2(wk.w.Skipped, id, v.cause)
		return
	case v.step.Idle:
		v.ok = true
		call1(wk.w.Idle, id)
		return
	case !wk.acquire():
		call2(wk.w.Skipped, id, "")
		return
	}
	call1(wk.w.Start, id)
	err := wk.w.Run(wk.ctx, id)
	var late func(context.Context) error
	if err == nil && wk.w.Late != nil {
		late = wk.w.Late(id)
	}
	if late != nil {
		<-wk.sem
		v.release() // the dependents go now; the late part waits for them
		err = wk.runLate(v, late)
	} else {
		<-wk.sem
	}
	wk.finish(v, err)
}

// runLate runs a step's late part once its dependents all finished well.
func (wk *walk) runLate(v *vertex, late func(context.Context) error) error {
	for _, dv := range wk.dependents[v.step.ID] {
		<-dv.done
		if !dv.ok {
			call2(wk.w.Held, v.step.ID, dv.step.ID+" did not finish")
			return nil
		}
	}
	if !wk.acquire() {
		call2(wk.w.Held, v.step.ID, "interrupted")
		return nil
	}
	defer func() { <-wk.sem }()
	return late(wk.ctx)
}

func (wk *walk) finish(v *vertex, err error) {
	failed := err != nil
	if wk.w.Done != nil {
		failed = wk.w.Done(v.step.ID, err)
	}
	if failed {
		v.cause = v.step.ID
	}
	if err != nil {
		return
	}
	v.ok = true
	wk.mu.Lock()
	wk.ok[v.step.ID] = true
	wk.mu.Unlock()
}

func call1(f func(string), a string) {
	if f != nil {
		f(a)
	}
}

func call2(f func(string, string), a, b string) {
	if f != nil {
		f(a, b)
	}
}
