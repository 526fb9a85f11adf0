package queuekit

import (
	"fmt"
	"sync"

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

// followers maps each session that has leases to its follower. mu also
// guards every follower's fields but s, kick and stop.
var followers = struct {
	mu sync.Mutex
	m  map[Session]*follower
}{m: make(map[Session]*follower)}

// follower fans one session's state changes out to its leases. Its owner
// is the session's leases: the first grant starts it (follow) and the end
// of the last one stops it (leave). A lost session's leases are lost by
// the follower itself, and so they end and stop it.
type follower struct {
	s    Session
	kick chan struct{} // fresh leases wait (buffered 1)
	stop chan struct{} // closed once the last lease ended

	leases  map[engine.Control]struct{}
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
	if f == nil {
		f = &follower{
			s:       s,
			kick:    make(chan struct{}, 1),
			stop:    make(chan struct{}),
			leases:  make(map[engine.Control]struct{}),
			applied: baton.Held, // leases are built Held
		}
		followers.m[s] = f
		go f.run()
	}
	f.leases[ctl] = struct{}{}
	if st != baton.Held || f.applied != baton.Held {
		// The lease may need a state other than the Held it was built in.
		// Otherwise the follower's next look, which any change of the
		// session brings about, covers it: a change reaches all leases.
		f.fresh = append(f.fresh, ctl)
		select {
		case f.kick <- struct{}{}:
		default:
		}
	}
}

// leave unregisters an ended lease of s, stopping the follower with the
// last. The lease's follower is the one registered for s: a follower
// leaves the map only once it has no lease.
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
	close(f.stop)
	f.fresh = nil
	delete(followers.m, s)
}

// run mirrors the session's state onto its leases until the last lease
// ended. It never holds followers.mu while it changes a lease: a lease's
// observer and its OnEnd (leave) run inside those calls.
func (f *follower) run() {
	for {
		st, changed := f.s.Observe()
		followers.mu.Lock()
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
		select {
		case <-changed:
		case <-f.kick:
		case <-f.stop:
			return
		}
	}
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
