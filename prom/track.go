package batonprom

import (
	"sync"

	"github.com/baton-go/baton"
)

// DefaultMaxTracked is the default bound on the acquires and leases the
// Collector tracks at once for its gauges; see Options.MaxTracked.
const DefaultMaxTracked = 1 << 16

// endedMemory is how many ended leases the tracker remembers, so that a
// Suspended, Resumed or Granted event delivered after the lease's Lost or
// Released (they come from different goroutines) cannot bring it back.
// Such events trail the end by microseconds; 4096 covers any burst.
const endedMemory = 4096

// gauge names one of the three live counts.
type gauge uint8

const (
	waiting gauge = iota
	held
	suspended
)

// phase is what the tracker knows of one acquire and the lease it granted.
type phase[K comparable] struct {
	key   K // the labels at first sight; every later change uses them
	flags [3]bool
}

// tracker keeps the gauges as counts of live acquires and leases, by
// Event.Acquire. A gauge moves only when one entry's flag flips, and only
// under mu, so every gauge equals the number of entries with its flag set
// and can never go negative, whatever order events arrive in.
type tracker[K comparable] struct {
	mu    sync.Mutex
	live  map[uint64]*phase[K]
	gone  *endedSet
	max   int
	apply func(key K, g gauge, delta int) // called under mu
}

func newTracker[K comparable](max int, apply func(K, gauge, int)) *tracker[K] {
	if max <= 0 {
		max = DefaultMaxTracked
	}
	return &tracker[K]{
		live:  make(map[uint64]*phase[K]),
		gone:  newEndedSet(),
		max:   max,
		apply: apply,
	}
}

// observe applies e to the entry of e.Acquire. Events without an Acquire
// ID cannot be paired and leave the gauges alone.
func (t *tracker[K]) observe(e baton.Event, key K) {
	if e.Acquire == 0 || !tracked(e.Kind) {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.gone.has(e.Acquire) {
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
		t.set(p, waiting, true)
	case baton.EventGranted:
		t.set(p, waiting, false)
		if !e.Reentered { // a re-entered grant adds a hold, not a lease
			t.set(p, held, true)
		}
	case baton.EventAcquireFailed:
		t.set(p, waiting, false)
	case baton.EventSuspended, baton.EventResumed:
		// Either may come before the Granted event, which the acquire
		// goroutine sends after the engine's watcher has started.
		t.set(p, held, true)
		t.set(p, suspended, e.Kind == baton.EventSuspended)
	case baton.EventLost, baton.EventReleased:
		t.set(p, waiting, false)
		t.set(p, held, false)
		t.set(p, suspended, false)
	}
	if !p.flags[waiting] && !p.flags[held] {
		t.forget(e.Acquire, end)
	}
}

func tracked(k baton.EventKind) bool {
	return k >= baton.EventAcquireStarted && k <= baton.EventReleased
}

func (t *tracker[K]) set(p *phase[K], g gauge, on bool) {
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
func (t *tracker[K]) forget(id uint64, ended bool) {
	delete(t.live, id)
	if ended {
		t.gone.add(id)
	}
}

// tracking returns how many acquires and leases are tracked.
func (t *tracker[K]) tracking() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.live)
}

// endedSet remembers the last endedMemory ended leases.
type endedSet struct {
	ids  map[uint64]struct{}
	ring []uint64 // in order of ending, to forget the oldest
	next int
}

func newEndedSet() *endedSet {
	return &endedSet{ids: make(map[uint64]struct{}), ring: make([]uint64, endedMemory)}
}

func (s *endedSet) has(id uint64) bool {
	_, ok := s.ids[id]
	return ok
}

func (s *endedSet) add(id uint64) {
	if s.has(id) {
		return
	}
	if old := s.ring[s.next]; old != 0 {
		delete(s.ids, old)
	}
	s.ring[s.next] = id
	s.next = (s.next + 1) % len(s.ring)
	s.ids[id] = struct{}{}
}
