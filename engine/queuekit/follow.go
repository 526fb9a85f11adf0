package queuekit

import (
	"fmt"
	"sync"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/engine"
)

// A held lease mirrors its session's state: Suspended while the session is
// in doubt, Held again when it recovers, Lost with it. One follower per
// session does that for all of the session's leases, so that a client
// holding 10 000 leases on one session runs one goroutine for them, not
// 10 000.
//
// The follower is the only goroutine that changes a registered lease's
// state, so its leases see the session's changes in order. A lease is
// built Held; follow hands it to the follower as "fresh" unless both the
// session and the state the follower last applied are Held, and the
// follower then applies the state it reads to the fresh leases only (or,
// when the state changed, to all). In whatever order a registration and a
// state change come, the follower re-reads after every change, so each
// lease ends up in the session's current state.
//
// The leases' observers run on the follower, one lease after the other;
// baton.Observer's contract (fast, never blocking) keeps that prompt.
//
// The registry is the package's because sessions are the engines' values:
// they are told apart by identity, so an engine that hands out one value
// per acquire (memlock's handles) gets one follower per lease, as before.
//
// A follower outlives its session's last lease by lingerFor: a session
// that takes and releases locks in a loop keeps one follower instead of
// starting a goroutine at every grant and waking it to stop at every
// release, two goroutine wake-ups per lock+unlock that its peers do not
// pay. At most maxIdle followers linger at once (the rest stop with their
// last lease, as before), so an engine with a session value per acquire
// keeps no more than that.

// lingerFor is how long a follower without leases waits for its session's
// next one. It is short enough that a leak check run as a test ends
// (goleak retries for about 400 ms) finds it gone.
const lingerFor = 100 * time.Millisecond

// maxIdle is the most followers that linger without leases at once.
const maxIdle = 16

// followers maps each session that has leases, or had them up to
// lingerFor ago, to its follower. mu also guards every follower's fields
// but s, kick and linger, and idle counts the followers without leases
// still in m.
var followers = struct {
	mu   sync.Mutex
	m    map[Session]*follower
	idle int
}{m: make(map[Session]*follower)}

// spare keeps followers whose goroutine has returned, so that a session
// whose only lease comes and goes (an uncontended lock+unlock) does not
// build a follower, its channel and its map on every grant. Only a
// follower's own goroutine puts it here, once it is done with it.
var spare = sync.Pool{New: func() any {
	linger := time.NewTimer(time.Hour)
	linger.Stop()
	return &follower{kick: make(chan struct{}, 1), linger: linger, leases: make(map[engine.Control]struct{})}
}}

// spareLeases is the most leases a follower may have had for its map to be
// kept for reuse: an emptied map keeps its capacity, and one that served
// 10 000 leases should go with the follower's last lease, not wait in
// spare.
const spareLeases = 64

// follower fans one session's state changes out to its leases. Its owner
// is the session's leases: the first grant starts it (follow), and the
// end of the last one stops it (leave), at once or after lingerFor
// without a new lease; a lost session stops it once its leases, which
// the follower itself loses, have ended.
type follower struct {
	s      Session
	kick   chan struct{} // fresh leases or stop wait (buffered 1)
	linger *time.Timer   // armed by leave when the last lease ended

	stop    bool // the last lease ended: the goroutine returns at its next look
	idle    bool // no lease since the last one ended; counted in followers.idle
	leases  map[engine.Control]struct{}
	most    int              // the most leases it had at once (see spareLeases)
	fresh   []engine.Control // registered since the follower last looked, and maybe not Held
	applied baton.State      // the session state last read, applied to all leases
}

// follow registers a new lease of s with s's follower, starting one if s
// has none.
func follow(s Session, ctl engine.Control) {
	st, _ := s.Observe() // read outside followers.mu: the session takes locks of its own
	followers.mu.Lock()
	defer followers.mu.Unlock()
	f := followers.m[s]
	switch {
	case f == nil:
		f = spare.Get().(*follower)
		f.s, f.stop, f.most = s, false, 0
		f.applied = baton.Held // leases are built Held
		followers.m[s] = f
		go f.run()
	case f.idle: // its timer, if it fires, finds a lease and is ignored
		f.idle = false
		followers.idle--
	}
	f.leases[ctl] = struct{}{}
	f.most = max(f.most, len(f.leases))
	if st != baton.Held || f.applied != baton.Held {
		// The lease may need a state other than the Held it was built in.
		// Otherwise the follower's next look, which any change of the
		// session brings about, covers it: a change reaches all leases.
		f.fresh = append(f.fresh, ctl)
		f.poke()
	}
}

// poke wakes the follower's goroutine for a look; a wake-up already
// pending covers this one.
func (f *follower) poke() {
	select {
	case f.kick <- struct{}{}:
	default:
	}
}

// leave unregisters an ended lease of s. With the last, the follower
// lingers for the session's next lease, or stops at once when maxIdle
// others already linger. The lease's follower is the one registered for
// s: a follower leaves the map only once it has no lease.
func leave(s Session, ctl engine.Control) {
	followers.mu.Lock()
	defer followers.mu.Unlock()
	f := followers.m[s]
	if f == nil {
		return
	}
	if _, ok := f.leases[ctl]; !ok {
		return
	}
	delete(f.leases, ctl)
	if len(f.leases) > 0 {
		return
	}
	if followers.idle < maxIdle {
		f.idle = true
		followers.idle++
		f.linger.Reset(lingerFor)
		return
	}
	f.stop = true
	f.fresh = nil
	delete(followers.m, s)
	f.poke()
}

// run mirrors the session's state onto its leases until it is stopped,
// or has lingered without leases for lingerFor, or its session is lost
// and its leases have ended. It never holds followers.mu while it changes
// a lease: a lease's observer and its OnEnd (leave) run inside those
// calls.
func (f *follower) run() {
	expired := false // the linger timer fired since the last look
	for {
		st, changed := f.s.Observe()
		followers.mu.Lock()
		if f.idle && (expired || st == baton.Lost) {
			f.idle, f.stop = false, true
			followers.idle--
			delete(followers.m, f.s)
		}
		if f.stop {
			f.retireLocked()
			followers.mu.Unlock()
			return
		}
		var to []engine.Control
		if st != f.applied {
			to = make([]engine.Control, 0, len(f.leases))
			for ctl := range f.leases {
				to = append(to, ctl)
			}
		} else {
			to = f.fresh
		}
		f.fresh, f.applied = nil, st
		followers.mu.Unlock()
		f.apply(st, to)
		expired = false
		select {
		case <-changed:
		case <-f.kick:
		case <-f.linger.C:
			expired = true
		}
	}
}

// retireLocked readies a stopped follower for reuse and hands it to
// spare. Its goroutine calls it last: nothing reads f after that.
func (f *follower) retireLocked() {
	f.s = nil
	f.linger.Stop()
	select { // a wake-up left over from the last lease's leave
	case <-f.kick:
	default:
	}
	if f.most > spareLeases {
		return // let the large map go with it
	}
	spare.Put(f)
}

// apply moves leases to the session state st.
func (f *follower) apply(st baton.State, leases []engine.Control) {
	if len(leases) == 0 {
		return
	}
	switch st {
	case baton.Suspended:
		for _, ctl := range leases {
			ctl.Suspend()
		}
	case baton.Held:
		for _, ctl := range leases {
			ctl.Resume()
		}
	case baton.Lost:
		cause := fmt.Errorf("session %s ended: %w", f.s.ID(), baton.ErrSessionLost)
		for _, ctl := range leases {
			ctl.Lose(cause)
		}
	}
}
