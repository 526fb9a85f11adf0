package memlock

import (
	"cmp"
	"errors"
	"fmt"
	"slices"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/clock"
)

// errExpired is the cause of a session the server expired.
var errExpired = errors.New("memlock: session expired")

// session is one session of a client on the server. Every field after id
// is guarded by the server's mutex.
type session struct {
	c  *Client
	id string

	state   baton.State // Held (connected), Suspended (cut off), Lost
	cause   error       // why it was lost
	changed chan struct{}
	entries map[string]*entry
	watches map[*watch]struct{} // armed or due, not yet closed
	orphans []string            // keys abandoned while cut off
	// handles are the acquires and leases with an entry on this session.
	// The server deletes a lost session's entries only once every one of
	// them has let go: each lease has then been told Lost.
	handles  map[*handle]struct{}
	idle     chan struct{} // closed once Lost and no handle is left
	isIdle   bool
	expiry   clock.Timer   // the server's expiry while cut off
	dropping bool          // the server is deleting the entries
	gone     chan struct{} // closed once the entries are deleted
}

func (c *Client) newSessionLocked() *session {
	c.nsess++
	return &session{
		c:       c,
		id:      fmt.Sprintf("%s#%d", c.name, c.nsess),
		state:   baton.Held,
		changed: make(chan struct{}),
		entries: make(map[string]*entry),
		watches: make(map[*watch]struct{}),
		handles: make(map[*handle]struct{}),
		idle:    make(chan struct{}),
		gone:    make(chan struct{}),
	}
}

func (s *session) setLocked(st baton.State) {
	s.state = st
	close(s.changed)
	s.changed = make(chan struct{})
}

// suspendLocked cuts s off and schedules its expiry on the server's clock.
func (s *session) suspendLocked() {
	if s.state != baton.Held {
		return
	}
	s.setLocked(baton.Suspended)
	srv := s.c.srv
	srv.timers.Add(1)
	s.expiry = srv.clk.AfterFunc(srv.ttl, func() {
		defer srv.timers.Done()
		srv.expire(s, errExpired)
	})
}

// resumeLocked reconnects a cut-off session before its expiry: the
// watches that fired meanwhile are delivered and the entries abandoned
// meanwhile deleted. It does nothing once the expiry has started.
func (s *session) resumeLocked() {
	if s.state != baton.Suspended || !s.stopExpiryLocked() {
		return
	}
	s.setLocked(baton.Held)
	for w := range s.watches {
		if w.due {
			w.closeLocked()
		}
	}
	srv := s.c.srv
	for _, k := range s.orphans {
		if en := srv.findLocked(k); en != nil && en.s == s {
			srv.removeLocked(en)
		}
	}
	s.orphans = nil
}

// stopExpiryLocked cancels the scheduled expiry; false means it has
// already started.
func (s *session) stopExpiryLocked() bool {
	if s.expiry == nil {
		return true
	}
	stopped := s.expiry.Stop()
	if stopped {
		s.c.srv.timers.Done()
	}
	s.expiry = nil
	return stopped
}

// loseLocked tells the client its session is over: Observe reports Lost,
// every watch closes, calls fail. The entries stay until drop.
func (s *session) loseLocked(cause error) {
	if s.state == baton.Lost {
		return
	}
	s.cause = cause
	s.setLocked(baton.Lost)
	for w := range s.watches {
		w.closeLocked()
	}
	s.orphans = nil
	s.settleLocked()
}

// settleLocked closes idle once a lost session has no handle left.
func (s *session) settleLocked() {
	if s.state == baton.Lost && len(s.handles) == 0 && !s.isIdle {
		s.isIdle = true
		close(s.idle)
	}
}

func (s *session) lostErrLocked() error {
	return fmt.Errorf("%w: session %s: %w", baton.ErrSessionLost, s.id, s.cause)
}

// expire ends s as the server does when its TTL runs out, in the order
// the contract requires: first the client learns (its leases go Lost and
// their contexts are cancelled), then the server deletes the entries, so
// no other client can be granted while a holder still believes it holds.
// It returns once the entries are gone.
func (srv *Server) expire(s *session, cause error) {
	srv.mu.Lock()
	if s.expiry != nil {
		s.stopExpiryLocked() // a no-op when this is the expiry's own call
	}
	s.loseLocked(cause)
	if s.dropping {
		srv.mu.Unlock()
		<-s.gone
		return
	}
	s.dropping = true
	idle := s.idle
	srv.mu.Unlock()

	<-idle // every acquire and lease on s has let go

	srv.mu.Lock()
	defer srv.mu.Unlock()
	doomed := make([]*entry, 0, len(s.entries))
	for _, en := range s.entries {
		doomed = append(doomed, en)
	}
	slices.SortFunc(doomed, func(a, b *entry) int {
		return cmp.Or(cmp.Compare(a.d.name, b.d.name), cmp.Compare(a.e.Seq, b.e.Seq))
	})
	for _, en := range doomed {
		srv.removeLocked(en)
	}
	close(s.gone)
}

// watch is one watch of a session. Its channel closes when the watched
// change happens while the session is connected, when the session
// reconnects after the change happened while it was cut off, or when the
// session is lost.
type watch struct {
	s   *session
	ch  chan struct{}
	due bool // fired while the session was cut off
}

func (s *session) newWatchLocked() *watch {
	w := &watch{s: s, ch: make(chan struct{})}
	s.watches[w] = struct{}{}
	return w
}

func (w *watch) fireLocked() {
	switch w.s.state {
	case baton.Held:
		w.closeLocked()
	case baton.Suspended:
		w.due = true
	}
}

func (w *watch) closeLocked() {
	if _, ok := w.s.watches[w]; ok {
		delete(w.s.watches, w)
		close(w.ch)
	}
}
