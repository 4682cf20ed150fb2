package main

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// exitInterrupted is the exit code of a command interrupted before it
// changed anything (128 + SIGINT, as shells report it).
const exitInterrupted = 130

// errInterrupted ends a command interrupted while planning or at the
// prompt: one line, no "Error:" prefix.
//
//lint:ignore ST1005 printed alone as a sentence, as shells print such notes
var errInterrupted = &exitError{code: exitInterrupted, err: errors.New("Interrupted: nothing was changed."), plain: true}

// notifySignals delivers SIGINT and SIGTERM (what CI systems send on
// cancel) to the returned channel until stop is called.
func notifySignals() (<-chan os.Signal, func()) {
	ch := make(chan os.Signal, 4)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	return ch, func() { signal.Stop(ch) }
}

// interrupts turns interrupts into pvectl's two levels of stopping, as
// Terraform does. While planning or at the prompt the first one ends the
// command (ctx is cancelled; nothing was changed). While applying, the
// first one starts nothing new (stop is closed) and the running changes
// finish — their PVE tasks are waited for — and the second one stops
// waiting (ctx is cancelled).
type interrupts struct {
	ctx    context.Context
	cancel context.CancelFunc
	stop   chan struct{}
	done   chan struct{}
	end    func()

	mu       sync.Mutex
	received int
	view     *progressView // set while the apply walk runs
	atApply  int           // interrupts received before the walk began
}

// watchInterrupts starts listening; close stops it.
func watchInterrupts(parent context.Context, source func() (<-chan os.Signal, func())) *interrupts {
	ctx, cancel := context.WithCancel(parent)
	sigs, end := source()
	in := &interrupts{ctx: ctx, cancel: cancel, stop: make(chan struct{}), done: make(chan struct{}), end: end}
	go func() {
		for {
			select {
			case <-in.done:
				return
			case <-sigs:
				in.handle()
			}
		}
	}()
	return in
}

func (in *interrupts) handle() {
	in.mu.Lock()
	in.received++
	n, v := in.received-in.atApply, in.view
	in.mu.Unlock()
	switch {
	case v == nil:
		in.cancel()
	case n == 1:
		v.interrupted()
		close(in.stop)
	case n == 2:
		v.abandoned()
		in.cancel()
	}
}

// applying tells the handler that the walk runs and reports through v.
func (in *interrupts) applying(v *progressView) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.view, in.atApply = v, in.received
}

// interrupted reports whether any interrupt came.
func (in *interrupts) interrupted() bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.received > 0
}

func (in *interrupts) close() {
	in.end()
	close(in.done)
	in.cancel()
}
