// Package recorder is a baton.Observer for tests: it keeps every event it
// is told, in order, so a test can assert the exact sequence of a story.
package recorder

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/baton-go/baton"
)

// Recorder keeps every event. It is safe for concurrent use.
type Recorder struct {
	mu      sync.Mutex
	events  []baton.Event
	changed chan struct{}
}

var _ baton.Observer = (*Recorder)(nil)

// New returns an empty Recorder.
func New() *Recorder { return &Recorder{changed: make(chan struct{})} }

// Observe records e.
func (r *Recorder) Observe(_ context.Context, e baton.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
	close(r.changed)
	r.changed = make(chan struct{})
}

// Events returns the events recorded so far, oldest first.
func (r *Recorder) Events() []baton.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

// Of returns the recorded events for which keep is true, oldest first.
func (r *Recorder) Of(keep func(baton.Event) bool) []baton.Event {
	var out []baton.Event
	for _, e := range r.Events() {
		if keep(e) {
			out = append(out, e)
		}
	}
	return out
}

// Acquire returns the events of one acquire and the lease it granted.
func (r *Recorder) Acquire(id uint64) []baton.Event {
	return r.Of(func(e baton.Event) bool { return e.Acquire == id })
}

// Kinds returns the kinds of events.
func Kinds(events []baton.Event) []baton.EventKind {
	out := make([]baton.EventKind, len(events))
	for i, e := range events {
		out[i] = e.Kind
	}
	return out
}

// WaitFor waits until an event satisfying match is recorded, or d of real
// time passed, and returns it; ok is false on timeout.
func (r *Recorder) WaitFor(d time.Duration, match func(baton.Event) bool) (baton.Event, bool) {
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	for {
		r.mu.Lock()
		i := slices.IndexFunc(r.events, match)
		var e baton.Event
		if i >= 0 {
			e = r.events[i]
		}
		changed := r.changed
		r.mu.Unlock()
		if i >= 0 {
			return e, true
		}
		select {
		case <-changed:
		case <-deadline.C:
			return baton.Event{}, false
		}
	}
}
