package clock

import (
	"context"
	"slices"
	"sync"
	"time"
)

// Fake is a virtual clock for tests. Its time starts where NewFake puts it
// and moves only by Advance or Set. It is safe for concurrent use.
//
// A test that advances the clock usually has to know that the code under
// test is already waiting on a timer, or the advance would pass before the
// timer exists; BlockUntil waits for that.
type Fake struct {
	mu      sync.Mutex
	now     time.Time
	timers  []*fakeTimer  // active, in no particular order
	changed chan struct{} // closed and replaced when the set of timers changes
}

// NewFake returns a Fake whose time is start.
func NewFake(start time.Time) *Fake {
	return &Fake{now: start, changed: make(chan struct{})}
}

// Now returns the virtual time.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// Since returns the virtual time elapsed since t.
func (f *Fake) Since(t time.Time) time.Duration { return f.Now().Sub(t) }

// Until returns the virtual duration until t.
func (f *Fake) Until(t time.Time) time.Duration { return t.Sub(f.Now()) }

// NewTimer returns a timer firing once the virtual time has advanced by d.
func (f *Fake) NewTimer(d time.Duration) Timer {
	t := &fakeTimer{f: f, ch: make(chan time.Time, 1)}
	t.Reset(d)
	return t
}

// AfterFunc calls fn in its own goroutine once the virtual time has
// advanced by d.
func (f *Fake) AfterFunc(d time.Duration, fn func()) Timer {
	t := &fakeTimer{f: f, fn: fn}
	t.Reset(d)
	return t
}

// Advance moves the virtual time forward by d, firing the timers it
// passes in deadline order, each at its own deadline (Now, seen from a
// timer's receiver, may already be later).
func (f *Fake) Advance(d time.Duration) {
	if d < 0 {
		panic("clock: Fake.Advance with a negative duration")
	}
	f.Set(f.Now().Add(d))
}

// Set moves the virtual time to t, firing timers as Advance does. Moving
// it backwards fires nothing.
func (f *Fake) Set(t time.Time) {
	for {
		f.mu.Lock()
		next := f.nextDueLocked(t)
		if next == nil {
			if t.After(f.now) {
				f.now = t
			}
			f.mu.Unlock()
			return
		}
		if next.when.After(f.now) {
			f.now = next.when
		}
		// Remove and fire under one hold of the lock: a Reset between the
		// two would otherwise re-arm the timer and still receive this
		// fire, stamped with the new deadline.
		f.removeLocked(next)
		next.fireLocked(next.when)
		f.mu.Unlock()
	}
}

// Timers returns the number of active timers.
func (f *Fake) Timers() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.timers)
}

// Next returns the deadline of the active timer due first; ok is false
// when no timer is active. A test steps the clock from event to event
// with Next and Set, letting the code under test react to each.
func (f *Fake) Next() (when time.Time, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, ft := range f.timers {
		if !ok || ft.when.Before(when) {
			when, ok = ft.when, true
		}
	}
	return when, ok
}

// BlockUntil waits until at least n timers are active, or ctx ends (its
// error is returned).
func (f *Fake) BlockUntil(ctx context.Context, n int) error {
	for {
		f.mu.Lock()
		ok, ch := len(f.timers) >= n, f.changed
		f.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// nextDueLocked returns the active timer with the earliest deadline not
// after t, nil if none.
func (f *Fake) nextDueLocked(t time.Time) *fakeTimer {
	var next *fakeTimer
	for _, ft := range f.timers {
		if !ft.when.After(t) && (next == nil || ft.when.Before(next.when)) {
			next = ft
		}
	}
	return next
}

func (f *Fake) removeLocked(t *fakeTimer) bool {
	i := slices.Index(f.timers, t)
	if i < 0 {
		return false
	}
	f.timers = slices.Delete(f.timers, i, i+1)
	f.notifyLocked()
	return true
}

func (f *Fake) notifyLocked() {
	close(f.changed)
	f.changed = make(chan struct{})
}

type fakeTimer struct {
	f    *Fake
	when time.Time      // guarded by f.mu
	ch   chan time.Time // nil for AfterFunc timers
	fn   func()
}

func (t *fakeTimer) C() <-chan time.Time { return t.ch }

func (t *fakeTimer) Stop() bool {
	t.f.mu.Lock()
	defer t.f.mu.Unlock()
	t.drain()
	return t.f.removeLocked(t)
}

func (t *fakeTimer) Reset(d time.Duration) bool {
	t.f.mu.Lock()
	defer t.f.mu.Unlock()
	t.drain()
	was := t.f.removeLocked(t)
	t.when = t.f.now.Add(d)
	t.f.timers = append(t.f.timers, t)
	t.f.notifyLocked()
	if d <= 0 {
		// Due now: fire without waiting for an Advance, as a real timer
		// with a non-positive duration fires at once.
		t.f.removeLocked(t)
		t.fireLocked(t.when)
	}
	return was
}

// drain empties the channel so that no stale value is received after Stop
// or Reset (time.Timer's behaviour since Go 1.23).
func (t *fakeTimer) drain() {
	if t.ch == nil {
		return
	}
	select {
	case <-t.ch:
	default:
	}
}

// fireLocked sends when on the timer's channel (which has room for one
// value: Stop and Reset drain it) or starts the AfterFunc's call.
func (t *fakeTimer) fireLocked(when time.Time) {
	if t.fn != nil {
		go t.fn()
		return
	}
	select {
	case t.ch <- when:
	default:
	}
}
