package batontest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/baton-go/baton"
)

// RW is a read/write lock as the suite sees it. Readers share; a writer
// excludes readers and writers; grants follow the queue, so a reader never
// overtakes a queued writer.
type RW interface {
	// RLock blocks until the read side is granted or ctx ends.
	RLock(ctx context.Context) (*baton.Lease, error)
	// TryRLock makes one attempt at the read side (baton.ErrNotAcquired
	// when a writer holds or is queued ahead).
	TryRLock(ctx context.Context) (*baton.Lease, error)
	// Lock blocks until the write side is granted or ctx ends. A context
	// derived from a read lease of the same lock must be refused with an
	// error wrapping baton.ErrUpgradeRefused.
	Lock(ctx context.Context) (*baton.Lease, error)
	// TryLock makes one attempt at the write side.
	TryLock(ctx context.Context) (*baton.Lease, error)
}

// RWClient is a Client whose engine has read/write locks. TestRWMutex
// skips an engine whose Client does not implement it.
type RWClient interface {
	Client
	// RWMutex returns the read/write lock called name; an invalid name
	// fails with an error wrapping baton.ErrInvalidName.
	RWMutex(name string) (RW, error)
}

// TestRWMutex runs the read/write lock conformance subtests against e. It
// skips, saying so, when e's clients do not implement RWClient.
func TestRWMutex(t *testing.T, e Engine) {
	t.Helper()
	s := newSuite(t, e)
	if _, ok := s.client(t).(RWClient); !ok {
		t.Skipf("%s: Client does not implement batontest.RWClient: no read/write lock to test", e.Name)
	}
	runAll(t, []subtest{
		{"InvalidName", s.testRWInvalidName},
		{"ReadersShare", s.testRWReadersShare},
		{"WriterExclusive", s.testRWWriterExclusive},
		{"QueueOrder", s.testRWQueueOrder},
		{"Reentrancy", s.testRWReentrancy},
		{"UpgradeRefused", s.testRWUpgradeRefused},
		{"CancelWhileWaiting", s.testRWCancelWhileWaiting},
		{"Lost", s.testRWLost},
	})
}

// rw returns a new client's read/write lock called name.
func (s *suite) rw(t *testing.T, name string) RW {
	t.Helper()
	c, ok := s.client(t).(RWClient)
	if !ok {
		s.fatalf(t, "RWClient", "NewClient returned a %T, which lacks RWMutex", c)
	}
	m, err := c.RWMutex(name)
	if err != nil || m == nil {
		s.fatalf(t, "valid name", "RWMutex(%q) = %v, %v, want a lock", name, m, err)
	}
	return m
}

// readSide is the read side of an RW as a baton.Locker, for the shared
// helpers.
type readSide struct{ rw RW }

func (r readSide) Lock(ctx context.Context) (*baton.Lease, error)    { return r.rw.RLock(ctx) }
func (r readSide) TryLock(ctx context.Context) (*baton.Lease, error) { return r.rw.TryRLock(ctx) }

// rlock takes the read side with a bounded wait or stops the test.
func (s *suite) rlock(t *testing.T, m RW, name string) *baton.Lease {
	t.Helper()
	l, err := m.RLock(opCtx(t, 10*time.Second))
	if err != nil || l == nil {
		s.fatalf(t, "acquire", "RLock(%q) = %v, %v, want a lease", name, l, err)
	}
	s.checkFresh(t, l, name)
	return l
}

// refused checks that a Try* call fails with ErrNotAcquired, promptly and
// without a lease.
func (s *suite) refused(t *testing.T, invariant, what string, try func(context.Context) (*baton.Lease, error)) {
	t.Helper()
	start := time.Now()
	l, err := try(opCtx(t, 10*time.Second))
	took := time.Since(start)
	if l != nil {
		s.errorf(t, invariant, "%s = lease (token %d), %v, want an error wrapping %v", what, l.Token(), err, baton.ErrNotAcquired)
		s.release(t, l)
		return
	}
	if !errors.Is(err, baton.ErrNotAcquired) {
		s.errorf(t, invariant, "%s = %v, want an error wrapping %v", what, err, baton.ErrNotAcquired)
	}
	if took > TryLockBound {
		s.errorf(t, "TryLock", "%s took %v, want ≤ %v", what, took, TryLockBound)
	}
}

// stillWaiting checks that p has not returned after d: it is queued
// behind a holder that has not released.
func (s *suite) stillWaiting(t *testing.T, p *pending, d time.Duration, invariant, what string) {
	t.Helper()
	if r, ok := p.wait(d); ok {
		s.errorf(t, invariant, "%s returned %v, %v while it should wait", what, leaseDesc(r.l), r.err)
	}
}

// granted waits up to d for p's lease or stops the test.
func (s *suite) granted(t *testing.T, p *pending, d time.Duration, invariant, what string) result {
	t.Helper()
	r, ok := p.wait(d)
	switch {
	case !ok:
		s.fatalf(t, invariant, "%s not granted within %v", what, d)
	case r.err != nil || r.l == nil:
		s.fatalf(t, invariant, "%s = %v, %v, want a lease", what, r.l, r.err)
	}
	return r
}

// leaseDesc describes a lease (or its absence) in a message.
func leaseDesc(l *baton.Lease) string {
	if l == nil {
		return "no lease"
	}
	return fmt.Sprintf("lease (token %d)", l.Token())
}

// awaitCount waits until name has at least n entries, so a waiter started
// asynchronously has queued; it only logs when it has not, since the
// checks that follow report what matters.
func (s *suite) awaitCount(t *testing.T, list func(testing.TB, string) []string, name string, n int) {
	t.Helper()
	if !Eventually(2*time.Second, func() bool { return len(list(t, name)) >= n }) {
		t.Logf("%s: %d entries of %q not visible after 2s; continuing", s.e.Name, n, name)
	}
}

func (s *suite) testRWInvalidName(t *testing.T) {
	c, _ := s.client(t).(RWClient)
	for _, name := range []string{"", "a//b", "../x", "a\x00b"} {
		m, err := c.RWMutex(name)
		if !errors.Is(err, baton.ErrInvalidName) {
			s.errorf(t, "names", "RWMutex(%q) = %v, %v, want an error wrapping %v", name, m, err, baton.ErrInvalidName)
		}
	}
}

// testRWReadersShare checks that readers of different clients hold at
// once, and that a writer is refused while they do.
func (s *suite) testRWReadersShare(t *testing.T) {
	name := lockName("rw-share")
	m1, m2, m3, mw := s.rw(t, name), s.rw(t, name), s.rw(t, name), s.rw(t, name)
	r1 := s.rlock(t, m1, name)
	r2, err := m2.TryRLock(opCtx(t, 10*time.Second))
	if err != nil || r2 == nil {
		s.fatalf(t, "readers share", "second client's TryRLock(%q) while a reader holds = %v, %v, want a lease", name, r2, err)
	}
	s.checkFresh(t, r2, name)
	// A blocking RLock must not wait for readers either.
	r3, err := m3.RLock(opCtx(t, s.cleanupBound()))
	if err != nil || r3 == nil {
		s.fatalf(t, "readers share", "third client's RLock(%q) while two readers hold = %v, %v, want a lease within %v", name, r3, err, s.cleanupBound())
	}
	s.checkFresh(t, r3, name)
	if r1.Owner() == r2.Owner() || r2.Owner() == r3.Owner() || r1.Owner() == r3.Owner() {
		s.errorf(t, "owner unique to the grant", "readers' Owner() = %q, %q, %q, want distinct", r1.Owner(), r2.Owner(), r3.Owner())
	}
	before := s.entries(t, name)
	s.refused(t, "writer excludes readers", "TryLock while three readers hold", mw.TryLock)
	if got, ok := s.awaitEntries(t, name, before, s.cleanupBound()); !ok {
		s.errorf(t, "no entry left behind", "entries after a refused TryLock = %q, want the readers' %q", got, before)
	}
	for _, l := range []*baton.Lease{r1, r2, r3} {
		if st := l.State(); st != baton.Held {
			s.errorf(t, "readers share", "reader's State() with other readers = %v, want %v", st, baton.Held)
		}
	}
	s.release(t, r1)
	s.release(t, r2)
	s.refused(t, "writer excludes readers", "TryLock while one reader holds", mw.TryLock)
	s.release(t, r3)
	w, err := mw.TryLock(opCtx(t, 10*time.Second))
	if err != nil {
		s.fatalf(t, "TryLock", "TryLock(%q) after every reader released = %v, want a lease", name, err)
	}
	for _, r := range []*baton.Lease{r1, r2, r3} {
		if w.Token() <= r.Token() {
			s.errorf(t, "writer token exceeds earlier grants", "writer's token %d ≤ earlier reader's %d", w.Token(), r.Token())
		}
	}
	s.release(t, w)
	if got, ok := s.awaitEntries(t, name, nil, s.cleanupBound()); !ok {
		s.errorf(t, "no entry left behind", "entries of %q after every release = %q, want none", name, got)
	}
}

// testRWWriterExclusive checks that a writer excludes readers and writers,
// both refusing Try* and making blocking calls wait, and that the waiters
// are granted in queue order once it releases.
func (s *suite) testRWWriterExclusive(t *testing.T) {
	name := lockName("rw-writer")
	mw, mr, mw2 := s.rw(t, name), s.rw(t, name), s.rw(t, name)
	w, err := mw.Lock(opCtx(t, 10*time.Second))
	if err != nil {
		s.fatalf(t, "acquire", "Lock(%q) = %v, want a lease", name, err)
	}
	s.checkFresh(t, w, name)
	s.refused(t, "writer excludes readers", "TryRLock while a writer holds", mr.TryRLock)
	s.refused(t, "writer excludes writers", "TryLock while a writer holds", mw2.TryLock)

	pr := s.lockAsync(t, t.Context(), readSide{mr}, w.State)
	s.awaitCount(t, s.entries, name, 2)
	pw := s.lockAsync(t, t.Context(), mw2, nil)
	s.awaitCount(t, s.entries, name, 3)
	s.stillWaiting(t, pr, 300*time.Millisecond, "writer excludes readers", "RLock while a writer holds")
	s.stillWaiting(t, pw, 0, "writer excludes writers", "Lock while a writer holds")

	s.release(t, w)
	r := s.granted(t, pr, s.cleanupBound(), "progress", "reader queued behind the writer, after it released,")
	s.checkFresh(t, r.l, name)
	if r.l.Token() <= w.Token() {
		s.errorf(t, "tokens increase", "reader granted after the writer has token %d, want > the writer's %d", r.l.Token(), w.Token())
	}
	s.stillWaiting(t, pw, 300*time.Millisecond, "writer excludes readers", "second writer's Lock while a reader holds")
	s.release(t, r.l)
	w2 := s.granted(t, pw, s.cleanupBound(), "progress", "second writer, after the reader released,")
	s.checkFresh(t, w2.l, name)
	if w2.l.Token() <= r.l.Token() || w2.l.Token() <= w.Token() {
		s.errorf(t, "writer token exceeds earlier grants", "second writer's token %d, want > %d (reader) and > %d (writer)", w2.l.Token(), r.l.Token(), w.Token())
	}
	s.release(t, w2.l)
	if got, ok := s.awaitEntries(t, name, nil, s.cleanupBound()); !ok {
		s.errorf(t, "no entry left behind", "entries of %q after every release = %q, want none", name, got)
	}
}

// testRWQueueOrder is the example: R41 and R42 read together, W43
// waits for both, R44 waits for W43 although only readers hold when it
// arrives (a reader never overtakes a queued writer).
func (s *suite) testRWQueueOrder(t *testing.T) {
	name := lockName("rw-order")
	m41, m42, m43, m44, m5 := s.rw(t, name), s.rw(t, name), s.rw(t, name), s.rw(t, name), s.rw(t, name)
	r41 := s.rlock(t, m41, name)
	r42 := s.rlock(t, m42, name)
	p43 := s.lockAsync(t, t.Context(), m43, nil)
	s.awaitCount(t, s.entries, name, 3)
	p44 := s.lockAsync(t, t.Context(), readSide{m44}, nil)
	s.awaitCount(t, s.entries, name, 4)

	s.stillWaiting(t, p43, 300*time.Millisecond, "writer waits for earlier readers", "W43's Lock while R41 and R42 hold")
	s.stillWaiting(t, p44, 0, "reader never overtakes a queued writer", "R44's RLock while only readers hold but W43 is queued")
	s.refused(t, "reader never overtakes a queued writer", "TryRLock by a fifth client while W43 is queued", m5.TryRLock)

	s.release(t, r41)
	s.stillWaiting(t, p43, 300*time.Millisecond, "writer waits for earlier readers", "W43's Lock after R41 released while R42 holds")
	s.stillWaiting(t, p44, 0, "reader never overtakes a queued writer", "R44's RLock while R42 holds and W43 is queued")

	released := time.Now()
	s.release(t, r42)
	w43 := s.granted(t, p43, s.cleanupBound(), "progress", "W43 after R41 and R42 released")
	t.Logf("%s: W43 granted %v after the last earlier reader released", s.e.Name, w43.at.Sub(released).Round(time.Millisecond))
	s.checkFresh(t, w43.l, name)
	for _, r := range []*baton.Lease{r41, r42} {
		if w43.l.Token() <= r.Token() {
			s.errorf(t, "writer token exceeds earlier grants", "W43's token %d ≤ earlier reader's token %d", w43.l.Token(), r.Token())
		}
	}
	s.stillWaiting(t, p44, 300*time.Millisecond, "writer excludes readers", "R44's RLock while W43 holds")
	s.refused(t, "writer excludes readers", "TryRLock while W43 holds", m5.TryRLock)
	s.refused(t, "writer excludes writers", "TryLock while W43 holds", m5.TryLock)

	s.release(t, w43.l)
	r44 := s.granted(t, p44, s.cleanupBound(), "progress", "R44 after W43 released")
	s.checkFresh(t, r44.l, name)
	if r44.l.Token() <= w43.l.Token() {
		s.errorf(t, "tokens increase", "R44's token %d, want > W43's %d (granted after it)", r44.l.Token(), w43.l.Token())
	}
	s.release(t, r44.l)
	if got, ok := s.awaitEntries(t, name, nil, s.cleanupBound()); !ok {
		s.errorf(t, "no entry left behind", "entries of %q after every release = %q, want none", name, got)
	}
}

// testRWReentrancy checks that a context of a read lease re-enters the
// read side of the same lock object without a second entry, and a context
// of the write lease re-enters the write side.
func (s *suite) testRWReentrancy(t *testing.T) {
	name := lockName("rw-reentrancy")
	m, mw := s.rw(t, name), s.rw(t, name)
	r := s.rlock(t, m, name)
	before := s.entries(t, name)
	nested, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	r3, err := m.RLock(nested)
	switch {
	case err != nil:
		s.errorf(t, "reentrancy", "RLock(read lease's context) = %v, want the same lease", err)
	case r3 != r:
		s.errorf(t, "reentrancy", "RLock(read lease's context) returned another lease (token %d, want %d)", r3.Token(), r.Token())
		s.release(t, r3)
	default:
		if h := r.Holds(); h != 2 {
			s.errorf(t, "reentrancy", "Holds() after re-entering the read side = %d, want 2", h)
		}
		s.release(t, r)
	}
	if got, ok := s.awaitEntries(t, name, before, s.cleanupBound()); !ok {
		s.errorf(t, "reentrancy", "entries after re-entering the read side = %q, want unchanged %q", got, before)
	}
	s.release(t, r)

	w, err := mw.Lock(opCtx(t, 10*time.Second))
	if err != nil {
		s.fatalf(t, "acquire", "Lock(%q) = %v, want a lease", name, err)
	}
	nested2, cancel2 := context.WithTimeout(w.Context(), 10*time.Second)
	defer cancel2()
	w2, err := mw.Lock(nested2)
	switch {
	case err != nil:
		s.errorf(t, "reentrancy", "Lock(write lease's context) = %v, want the same lease", err)
	case w2 != w:
		s.errorf(t, "reentrancy", "Lock(write lease's context) returned another lease (token %d, want %d)", w2.Token(), w.Token())
		s.release(t, w2)
	default:
		if h := w.Holds(); h != 2 {
			s.errorf(t, "reentrancy", "Holds() after re-entering the write side = %d, want 2", h)
		}
		s.release(t, w)
	}
	s.release(t, w)
	if st := w.State(); st != baton.Released {
		s.errorf(t, "reentrancy", "write lease after releasing every hold: State() = %v, want %v", st, baton.Released)
	}
	if got, ok := s.awaitEntries(t, name, nil, s.cleanupBound()); !ok {
		s.errorf(t, "no entry left behind", "entries of %q after every release = %q, want none", name, got)
	}
}

// testRWUpgradeRefused checks that a reader asking for the write side of
// the same lock is refused at once with ErrUpgradeRefused (two readers
// upgrading would wait for each other forever), leaving no entry.
func (s *suite) testRWUpgradeRefused(t *testing.T) {
	name := lockName("rw-upgrade")
	m := s.rw(t, name)
	r := s.rlock(t, m, name)
	before := s.entries(t, name)
	for _, op := range []struct {
		name string
		f    func(context.Context) (*baton.Lease, error)
	}{{"Lock", m.Lock}, {"TryLock", m.TryLock}} {
		ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
		start := time.Now()
		l, err := op.f(ctx)
		took := time.Since(start)
		cancel()
		if l != nil || !errors.Is(err, baton.ErrUpgradeRefused) {
			s.errorf(t, "upgrade refused", "%s(read lease's context) = %s, %v, want an error wrapping %v", op.name, leaseDesc(l), err, baton.ErrUpgradeRefused)
			if l != nil && l != r {
				s.release(t, l)
			}
		}
		if took > TryLockBound {
			s.errorf(t, "upgrade refused", "%s(read lease's context) took %v, want a refusal within %v", op.name, took, TryLockBound)
		}
	}
	if got, ok := s.awaitEntries(t, name, before, s.cleanupBound()); !ok {
		s.errorf(t, "no entry left behind", "entries after refused upgrades = %q, want only the reader's %q", got, before)
	}
	if st := r.State(); st != baton.Held {
		s.errorf(t, "upgrade refused", "reader's State() after refused upgrades = %v, want %v", st, baton.Held)
	}
	// The documented way: release the read side, then take the write side.
	s.release(t, r)
	w, err := m.Lock(opCtx(t, 10*time.Second))
	if err != nil {
		s.fatalf(t, "acquire", "Lock(%q) after releasing the read side = %v, want a lease", name, err)
	}
	if w.Token() <= r.Token() {
		s.errorf(t, "writer token exceeds earlier grants", "writer's token %d ≤ the earlier reader's %d", w.Token(), r.Token())
	}
	s.release(t, w)
	if got, ok := s.awaitEntries(t, name, nil, s.cleanupBound()); !ok {
		s.errorf(t, "no entry left behind", "entries of %q after every release = %q, want none", name, got)
	}
}

// testRWCancelWhileWaiting checks that a reader waiting for a writer and a
// writer waiting for a reader honour cancellation within ReturnBound and
// leave no entry.
func (s *suite) testRWCancelWhileWaiting(t *testing.T) {
	for _, tc := range []struct {
		name         string
		holdWrite    bool
		waiterWrites bool
	}{
		{"ReaderBehindWriter", true, false},
		{"WriterBehindReader", false, true},
		{"WriterBehindWriter", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := lockName("rw-cancel")
			mh, mwait := s.rw(t, name), s.rw(t, name)
			var holder *baton.Lease
			if tc.holdWrite {
				l, err := mh.Lock(opCtx(t, 10*time.Second))
				if err != nil {
					s.fatalf(t, "acquire", "Lock(%q) = %v, want a lease", name, err)
				}
				holder = l
			} else {
				holder = s.rlock(t, mh, name)
			}
			before := s.entries(t, name)
			var m baton.Locker = mwait
			if !tc.waiterWrites {
				m = readSide{mwait}
			}
			p := s.lockAsync(t, t.Context(), m, nil)
			s.awaitCount(t, s.entries, name, len(before)+1)
			ended := time.Now()
			p.cancel()
			r, ok := p.wait(ReturnBound + 10*time.Second)
			switch {
			case !ok:
				s.fatalf(t, "context (I6)", "acquire still waiting 10s after its context was cancelled")
			case r.at.Sub(ended) > ReturnBound:
				s.errorf(t, "context (I6)", "acquire returned %v after its context was cancelled, want ≤ %v", r.at.Sub(ended).Round(time.Millisecond), ReturnBound)
			}
			if r.l != nil || !errors.Is(r.err, context.Canceled) {
				s.errorf(t, "context", "cancelled acquire = %s, %v, want an error wrapping %v", leaseDesc(r.l), r.err, context.Canceled)
			}
			if got, ok := s.awaitEntries(t, name, before, s.cleanupBound()); !ok {
				s.errorf(t, "no entry left behind (CURATOR-79)", "entries %v after the cancelled acquire = %q, want only the holder's %q", s.cleanupBound(), got, before)
			}
			s.release(t, holder)
			if got, ok := s.awaitEntries(t, name, nil, s.cleanupBound()); !ok {
				s.errorf(t, "no entry left behind", "entries of %q at the end = %q, want none", name, got)
			}
		})
	}
}

// testRWLost kills a holder's session (a reader, then a writer) and checks
// that it is told Lost within the bound, before the waiter of the other
// kind is granted, with a larger token (I5, I7).
func (s *suite) testRWLost(t *testing.T) {
	for _, tc := range []struct {
		name      string
		holdWrite bool
	}{{"Reader", false}, {"Writer", true}} {
		t.Run(tc.name, func(t *testing.T) {
			name := lockName("rw-lost")
			c1, ok := s.client(t).(RWClient)
			if !ok {
				s.fatalf(t, "RWClient", "NewClient returned a client without RWMutex")
			}
			m1, err := c1.RWMutex(name)
			if err != nil {
				s.fatalf(t, "valid name", "RWMutex(%q) = %v", name, err)
			}
			m2 := s.rw(t, name)
			var l1 *baton.Lease
			var waiter baton.Locker = m2
			if tc.holdWrite {
				l1, err = m1.Lock(opCtx(t, 10*time.Second))
				if err != nil {
					s.fatalf(t, "acquire", "Lock(%q) = %v", name, err)
				}
				waiter = readSide{m2}
			} else {
				l1 = s.rlock(t, m1, name)
			}
			l2 := s.checkLostAndTakenOver(t, name, c1, l1, waiter, s.entries)
			s.release(t, l2)
			if got, ok := s.awaitEntries(t, name, nil, s.lostBound()); !ok {
				s.errorf(t, "no entry left behind (I8)", "entries of %q after the dead session and the release = %q, want none", name, got)
			}
		})
	}
}

// checkLostAndTakenOver kills c1, which holds l1 on name, while waiter
// waits for it, and checks loss and takeover (I5, I7, I2). It returns the
// waiter's lease.
func (s *suite) checkLostAndTakenOver(t *testing.T, name string, c1 Client, l1 *baton.Lease, waiter baton.Locker, list func(testing.TB, string) []string) *baton.Lease {
	t.Helper()
	log := recordStates(t, l1)
	bound := s.lostBound()
	n := len(list(t, name))
	p := s.lockAsync(t, opCtx(t, bound+30*time.Second), waiter, l1.State)
	s.awaitCount(t, list, name, n+1)
	s.stillWaiting(t, p, 200*time.Millisecond, "exclusion", "waiter before the holder was killed")

	killed := time.Now()
	c1.Kill(t)
	lostIn := time.Duration(-1)
	if Eventually(bound+10*time.Second, func() bool { return l1.State() == baton.Lost }) {
		lostIn = time.Since(killed)
	}
	switch {
	case lostIn < 0:
		s.errorf(t, "loss is signalled", "holder's State() = %v %v after Kill, want %v", l1.State(), bound+10*time.Second, baton.Lost)
	case lostIn > bound:
		s.errorf(t, "loss is signalled", "holder declared Lost %v after Kill, want ≤ %v", lostIn.Round(time.Millisecond), bound)
	default:
		t.Logf("%s: holder Lost %v after Kill", s.e.Name, lostIn.Round(time.Millisecond))
	}
	if lostIn >= 0 {
		if states := log.states(); !validPath(states) || states[len(states)-1] != baton.Lost {
			s.errorf(t, "observe", "observed states %v, want Held → (Suspended ⇄ Held)* → Lost", states)
		}
		if cause := context.Cause(l1.Context()); !errors.Is(cause, baton.ErrLost) {
			s.errorf(t, "lease context", "context.Cause of a lost lease = %v, want an error wrapping %v", cause, baton.ErrLost)
		}
	}
	r, ok := p.wait(bound + 30*time.Second)
	switch {
	case !ok:
		s.fatalf(t, "progress (I5)", "waiter not granted %v after the holder's session was killed", time.Since(killed).Round(time.Millisecond))
	case r.err != nil:
		s.fatalf(t, "progress (I5)", "waiter = %v, want a lease once the holder's session died", r.err)
	}
	grantIn := r.at.Sub(killed)
	t.Logf("%s: waiter granted %v after Kill; holder was %v then", s.e.Name, grantIn.Round(time.Millisecond), r.probe)
	if grantIn > bound {
		s.errorf(t, "progress (I5)", "waiter granted %v after Kill, want ≤ %v", grantIn.Round(time.Millisecond), bound)
	}
	if r.probe == baton.Held {
		s.errorf(t, "suspended before another grant (I7)", "holder still Held when the waiter was granted (%v after Kill)", grantIn.Round(time.Millisecond))
	}
	if r.l.Token() <= l1.Token() {
		s.errorf(t, "tokens increase (I2)", "token after the holder was lost = %d, want > %d", r.l.Token(), l1.Token())
	}
	if err := l1.Release(opCtx(t, 10*time.Second)); !errors.Is(err, baton.ErrLost) {
		s.errorf(t, "release", "Release of a lost lease = %v, want an error wrapping %v", err, baton.ErrLost)
	}
	return r.l
}
