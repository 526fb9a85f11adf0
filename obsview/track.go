package obsview

import (
	"sync"

	"github.com/baton-go/baton"
)

// DefaultMaxTracked is the default bound on the acquires and leases a
// Tracker follows at once; each adapter re-exports it as the default of
// its Options.MaxTracked.
const DefaultMaxTracked = 1 << 16

// endedMemory is how many ended leases an EndedSet remembers, so that a
// Suspended, Resumed or Granted event delivered after the lease's Lost or
// Released (they come from different goroutines) cannot bring it back.
// Such events trail the end by microseconds; 4096 covers any burst.
const endedMemory = 4096

// Gauge names one of the live counts.
type Gauge uint8

// The live counts, in the order of an adapter's [Gauges] array.
const (
	Waiting   Gauge = iota // acquires started, not yet granted or failed
	Held                   // leases granted, not yet released or lost
	Suspended              // held leases whose ownership is in doubt
	Gauges                 // how many there are
)

// phase is what the tracker knows of one acquire and the lease it granted.
type phase[K comparable] struct {
	key   K // the labels at first sight; every later change uses them
	flags [Gauges]bool
}

// Tracker keeps the gauges as counts of live acquires and leases, by
// Event.Acquire. A gauge moves only when one entry's flag flips, and only
// under mu, so every gauge equals the number of entries with its flag set
// and can never go negative, whatever order events arrive in.
type Tracker[K comparable] struct {
	mu    sync.Mutex
	live  map[uint64]*phase[K]
	gone  *EndedSet
	max   int
	apply func(key K, g Gauge, delta int) // called under mu
}

// NewTracker returns a Tracker that follows at most max acquires at once
// (DefaultMaxTracked when max is 0 or less) and reports every change of a
// gauge to apply, under the Tracker's mutex: apply may use state that only
// it touches without a lock of its own.
func NewTracker[K comparable](max int, apply func(key K, g Gauge, delta int)) *Tracker[K] {
	if max <= 0 {
		max = DefaultMaxTracked
	}
	return &Tracker[K]{
		live:  make(map[uint64]*phase[K]),
		gone:  NewEndedSet(),
		max:   max,
		apply: apply,
	}
}

// Observe applies e to the entry of e.Acquire; key is the entry's labels
// when e is its first event. Events without an Acquire ID cannot be paired
// and leave the gauges alone.
func (t *Tracker[K]) Observe(e baton.Event, key K) {
	if e.Acquire == 0 || !tracked(e.Kind) {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.gone.Has(e.Acquire) {
		return
	}
	end := e.Kind == baton.EventLost || e.Kind == baton.EventReleased
	p := t.live[e.Acquire]
	if p == nil {
		if end || len(t.live) >= t.max {
			t.forget(e.Acquire, end)
			return
		}
		p = &phase[K]{key: key}
		t.live[e.Acquire] = p
	}
	switch e.Kind {
	case baton.EventAcquireStarted, baton.EventAcquireRetry:
		t.set(p, Waiting, true)
	case baton.EventGranted:
		t.set(p, Waiting, false)
		if !e.Reentered { // a re-entered grant adds a hold, not a lease
			t.set(p, Held, true)
		}
	case baton.EventAcquireFailed:
		t.set(p, Waiting, false)
	case baton.EventSuspended, baton.EventResumed:
		// Either may come before the Granted event, which the acquire
		// goroutine sends after the engine's watcher has started.
		t.set(p, Held, true)
		t.set(p, Suspended, e.Kind == baton.EventSuspended)
	case baton.EventLost, baton.EventReleased:
		t.set(p, Waiting, false)
		t.set(p, Held, false)
		t.set(p, Suspended, false)
	}
	if !p.flags[Waiting] && !p.flags[Held] {
		t.forget(e.Acquire, end)
	}
}

func tracked(k baton.EventKind) bool {
	return k >= baton.EventAcquireStarted && k <= baton.EventReleased
}

func (t *Tracker[K]) set(p *phase[K], g Gauge, on bool) {
	if p.flags[g] == on {
		return
	}
	p.flags[g] = on
	if on {
		t.apply(p.key, g, 1)
	} else {
		t.apply(p.key, g, -1)
	}
}

// forget drops the entry of id; when the lease ended it also remembers id
// for a while.
func (t *Tracker[K]) forget(id uint64, ended bool) {
	delete(t.live, id)
	if ended {
		t.gone.Add(id)
	}
}

// Tracking returns how many acquires and leases are tracked.
func (t *Tracker[K]) Tracking() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.live)
}

// EndedSet remembers the last few thousand ended leases, by acquire ID.
// It is not safe for concurrent use: its owner's mutex guards it.
type EndedSet struct {
	ids  map[uint64]struct{}
	ring []uint64 // in order of ending, to forget the oldest
	next int
}

// NewEndedSet returns an empty EndedSet.
func NewEndedSet() *EndedSet {
	return &EndedSet{ids: make(map[uint64]struct{}), ring: make([]uint64, endedMemory)}
}

// Has reports whether id ended recently.
func (s *EndedSet) Has(id uint64) bool {
	_, ok := s.ids[id]
	return ok
}

// Add remembers id as ended, forgetting the oldest when full.
func (s *EndedSet) Add(id uint64) {
	if s.Has(id) {
		return
	}
	if old := s.ring[s.next]; old != 0 {
		delete(s.ids, old)
	}
	s.ring[s.next] = id
	s.next = (s.next + 1) % len(s.ring)
	s.ids[id] = struct{}{}
}
