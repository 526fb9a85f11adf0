package batontest

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/baton-go/baton"
)

// testInvalidNames checks that every name breaking the naming rule is
// refused at Mutex time with ErrInvalidName, and never panics.
func (s *suite) testInvalidNames(t *testing.T) {
	c := s.client(t)
	for _, tc := range []struct{ why, name string }{
		{"empty", ""},
		{"only slashes", "/"},
		{"only slashes", "///"},
		{"empty segment", "a//b"},
		{"dot segment", "a/./b"},
		{"dot segment", "."},
		{"dot-dot segment", "../x"},
		{"dot-dot segment", "a/.."},
		{"NUL", "a\x00b"},
		{"control character", "a\x01b"},
		{"control character", "a\nb"},
		{"DEL", "a\x7fb"},
		{"C1 control U+0080", "a\u0080b"},
		{"C1 control U+0085", "\u0085"},
		{"C1 control U+009F", "a\u009f"},
		{"private use U+E000", "\ue000"},
		{"private use U+F8FF", "x\uf8ff"},
		{"specials U+FFF0", "\ufff0"},
		{"specials U+FFFF", "a/\uffff"},
		{"invalid UTF-8", "a\xffb"},
		{"truncated UTF-8", "a\xc3"},
		{"UTF-8 surrogate", "a\xed\xa0\x80"},
		{"1025 bytes", strings.Repeat("n", baton.MaxNameLen+1)},
		{"1025 bytes after trimming", "/" + strings.Repeat("n", baton.MaxNameLen+1) + "/"},
	} {
		err, panicked := func() (err error, p any) {
			defer func() { p = recover() }()
			m, err := c.Mutex(tc.name)
			if err == nil && m == nil {
				err = errors.New("nil Locker and nil error")
			}
			return err, nil
		}()
		switch {
		case panicked != nil:
			s.errorf(t, "names", "Mutex(%q) (%s) panicked: %v", tc.name, tc.why, panicked)
		case !errors.Is(err, baton.ErrInvalidName):
			s.errorf(t, "names", "Mutex(%q) (%s) = %v, want an error wrapping %v", tc.name, tc.why, err, baton.ErrInvalidName)
		}
	}
}

// testValidNames checks that names at the edges of the rule are accepted,
// normalised and lockable.
func (s *suite) testValidNames(t *testing.T) {
	c := s.client(t)
	base := lockName("names")
	long := base + "/" + strings.Repeat("n", baton.MaxNameLen-len(base)-1)
	for _, tc := range []struct{ why, name string }{
		{"leading and trailing slash", "/" + base + "/slash/"},
		{"dots inside a segment", base + "/a.b/..c/d.."},
		{"non-ASCII", base + "/grüße/注文"},
		{"just below U+D800", base + "/\ud7ff"},
		{"just above U+F8FF", base + "/\uf900"},
		{"just below U+FFF0", base + "/\uffef"},
		{"space and punctuation", base + "/order:lock 42"},
		{"exactly 1024 bytes", long},
		{"1024 bytes after trimming", "/" + long + "/"},
	} {
		m, err := c.Mutex(tc.name)
		if err != nil {
			s.errorf(t, "names", "Mutex(%q) (%s) = %v, want nil", tc.name, tc.why, err)
			continue
		}
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		l, err := m.TryLock(ctx)
		cancel()
		if err != nil {
			s.errorf(t, "names", "TryLock on %s name = %v, want a lease", tc.why, err)
			continue
		}
		s.checkFresh(t, l, tc.name)
		s.release(t, l)
		if got, ok := s.awaitEntries(t, strings.Trim(tc.name, "/"), nil, s.cleanupBound()); !ok {
			s.errorf(t, "no entry left behind", "entries of %s name after Release = %q, want none", tc.why, got)
		}
	}
}

// testTryLock checks the one-attempt acquire.
func (s *suite) testTryLock(t *testing.T) {
	name := lockName("trylock")
	c1, c2 := s.client(t), s.client(t)
	m1, m2 := s.mutex(t, c1, name), s.mutex(t, c2, name)

	l1, err := m1.TryLock(opCtx(t, 10*time.Second))
	if err != nil || l1 == nil {
		s.fatalf(t, "TryLock", "TryLock(%q) on a free lock = %v, %v, want a lease", name, l1, err)
	}
	s.checkFresh(t, l1, name)
	before := s.entries(t, name)
	if len(before) == 0 {
		s.errorf(t, "entries", "Entries(%q) while held = none, want the holder's entry", name)
	}

	for i := range 3 {
		start := time.Now()
		l, err := m2.TryLock(opCtx(t, 10*time.Second))
		took := time.Since(start)
		if !errors.Is(err, baton.ErrNotAcquired) {
			s.errorf(t, "TryLock", "TryLock(%q) #%d on a held lock = %v, want an error wrapping %v", name, i, err, baton.ErrNotAcquired)
		}
		if l != nil {
			s.errorf(t, "TryLock", "TryLock(%q) #%d on a held lock returned a lease (token %d)", name, i, l.Token())
			s.release(t, l)
		}
		if took > TryLockBound {
			s.errorf(t, "TryLock", "TryLock(%q) #%d on a held lock took %v, want ≤ %v", name, i, took, TryLockBound)
		}
	}
	if got, ok := s.awaitEntries(t, name, before, s.cleanupBound()); !ok {
		s.errorf(t, "no entry left behind", "entries of %q after failed TryLocks = %q, want only the holder's %q", name, got, before)
	}
	if st := l1.State(); st != baton.Held {
		s.errorf(t, "TryLock", "holder's State() after others' failed TryLocks = %v, want %v", st, baton.Held)
	}

	s.release(t, l1)
	l2, err := m2.TryLock(opCtx(t, 10*time.Second))
	if err != nil || l2 == nil {
		s.fatalf(t, "TryLock", "TryLock(%q) after the holder released = %v, %v, want a lease", name, l2, err)
	}
	s.checkFresh(t, l2, name)
	if l2.Token() <= l1.Token() {
		s.errorf(t, "tokens increase", "token after handoff = %d, want > %d", l2.Token(), l1.Token())
	}
	s.release(t, l2)
	if got, ok := s.awaitEntries(t, name, nil, s.cleanupBound()); !ok {
		s.errorf(t, "no entry left behind", "entries of %q after every release = %q, want none", name, got)
	}
}

// testRelease checks what a release does to the lease, its context and its
// observers.
func (s *suite) testRelease(t *testing.T) {
	name := lockName("release")
	c := s.client(t)
	m := s.mutex(t, c, name)
	l := s.lock(t, m, name)

	st1, ch1 := l.Observe()
	st2, ch2 := l.Observe()
	if st1 != baton.Held || st2 != baton.Held {
		s.errorf(t, "observe", "Observe() on a new lease = %v, %v, want %v", st1, st2, baton.Held)
	}
	if closed(ch1) || closed(ch2) {
		s.errorf(t, "observe", "Observe() channel of a new, unchanged lease is already closed")
	}
	select {
	case <-l.Done():
		s.errorf(t, "lease context", "Done() of a held lease is closed")
	default:
	}
	if err := l.Err(); err != nil {
		s.errorf(t, "lease context", "Err() of a held lease = %v, want nil", err)
	}

	s.release(t, l)
	if !closed(ch1) || !closed(ch2) {
		s.errorf(t, "observe", "Observe() channels not closed after Release: a state change was missed")
	}
	if st, _ := l.Observe(); st != baton.Released {
		s.errorf(t, "observe", "Observe() after Release = %v, want %v", st, baton.Released)
	}
	if st := l.State(); st != baton.Released {
		s.errorf(t, "release", "State() after Release = %v, want %v", st, baton.Released)
	}
	if h := l.Holds(); h != 0 {
		s.errorf(t, "release", "Holds() after Release = %d, want 0", h)
	}
	if !closed(l.Done()) {
		s.errorf(t, "lease context", "Done() not closed after Release")
	}
	if err := l.Context().Err(); !errors.Is(err, context.Canceled) {
		s.errorf(t, "lease context", "Context().Err() after Release = %v, want %v", err, context.Canceled)
	}
	if cause := context.Cause(l.Context()); !errors.Is(cause, baton.ErrReleased) {
		s.errorf(t, "lease context", "context.Cause after Release = %v, want %v", cause, baton.ErrReleased)
	}
	if err := l.Err(); !errors.Is(err, baton.ErrReleased) {
		s.errorf(t, "release", "Err() after Release = %v, want %v", err, baton.ErrReleased)
	}
	if err := l.Release(opCtx(t, 10*time.Second)); !errors.Is(err, baton.ErrNotHeld) {
		s.errorf(t, "release", "second Release(%q) = %v, want an error wrapping %v", name, err, baton.ErrNotHeld)
	}
	if got, ok := s.awaitEntries(t, name, nil, s.cleanupBound()); !ok {
		s.errorf(t, "no entry left behind", "entries of %q after Release = %q, want none", name, got)
	}

	// The lock is free again for the same Mutex, with a new lease.
	l2 := s.lock(t, m, name)
	if l2 == l {
		s.errorf(t, "release", "Lock after Release returned the released lease again")
	}
	if l2.Token() <= l.Token() {
		s.errorf(t, "tokens increase", "token of the next grant = %d, want > %d", l2.Token(), l.Token())
	}
	s.release(t, l2)
}

// testReentrancy checks that only the same lock object with a context of
// the lease re-enters, and that holds are counted.
func (s *suite) testReentrancy(t *testing.T) {
	name := lockName("reentrancy")
	c1, c2 := s.client(t), s.client(t)
	m1, m2 := s.mutex(t, c1, name), s.mutex(t, c2, name)
	l := s.lock(t, m1, name)
	before := s.entries(t, name)

	// A context derived from the lease re-enters.
	nested, cancel := context.WithTimeout(l.Context(), 10*time.Second)
	defer cancel()
	l2, err := m1.Lock(nested)
	switch {
	case err != nil:
		s.fatalf(t, "reentrancy", "Lock(lease context) on the same Mutex = %v, want the same lease", err)
	case l2 != l:
		s.errorf(t, "reentrancy", "Lock(lease context) on the same Mutex returned another lease (token %d, want %d)", l2.Token(), l.Token())
		s.release(t, l2)
	}
	if h := l.Holds(); h != 2 {
		s.errorf(t, "reentrancy", "Holds() after re-entering = %d, want 2", h)
	}
	if got := s.entries(t, name); !equalSets(got, before) {
		s.errorf(t, "reentrancy", "entries after re-entering = %q, want unchanged %q (no second queue entry)", got, before)
	}

	// Another lock object, even on the same client, does not re-enter.
	other := s.mutex(t, c1, name)
	if l3, err := other.TryLock(l.Context()); l3 != nil || !errors.Is(err, baton.ErrNotAcquired) {
		s.errorf(t, "reentrancy", "TryLock(lease context) on another Mutex of the same client = %v, %v, want %v", l3, err, baton.ErrNotAcquired)
		if l3 != nil && l3 != l {
			s.release(t, l3)
		}
	}
	wctx, wcancel := context.WithTimeout(l.Context(), 300*time.Millisecond)
	l3, err := other.Lock(wctx)
	wcancel()
	if l3 != nil || !errors.Is(err, context.DeadlineExceeded) {
		s.errorf(t, "reentrancy", "Lock(lease context, 300ms) on another Mutex of the same client = %v, %v, want %v", l3, err, context.DeadlineExceeded)
		if l3 != nil && l3 != l {
			s.release(t, l3)
		}
	}
	if l3, err := m2.TryLock(l.Context()); l3 != nil || !errors.Is(err, baton.ErrNotAcquired) {
		s.errorf(t, "reentrancy", "TryLock(lease context) on another client's Mutex = %v, %v, want %v", l3, err, baton.ErrNotAcquired)
		if l3 != nil && l3 != l {
			s.release(t, l3)
		}
	}
	if got, ok := s.awaitEntries(t, name, before, s.cleanupBound()); !ok {
		s.errorf(t, "no entry left behind", "entries after refused re-entries = %q, want only the holder's %q", got, before)
	}
	if h := l.Holds(); h != 2 {
		s.errorf(t, "reentrancy", "Holds() after refused re-entries = %d, want 2", h)
	}

	// First release keeps the lock.
	if err := l.Release(opCtx(t, 10*time.Second)); err != nil {
		s.errorf(t, "reentrancy", "first Release of 2 holds = %v, want nil", err)
	}
	if st, h := l.State(), l.Holds(); st != baton.Held || h != 1 {
		s.errorf(t, "reentrancy", "after first Release: State(), Holds() = %v, %d, want %v, 1", st, h, baton.Held)
	}
	if err := l.Context().Err(); err != nil {
		s.errorf(t, "reentrancy", "after first Release: Context().Err() = %v, want nil", err)
	}
	if l3, err := m2.TryLock(opCtx(t, 10*time.Second)); !errors.Is(err, baton.ErrNotAcquired) {
		s.errorf(t, "reentrancy", "another client's TryLock after first of 2 Releases = %v, want %v (still held)", err, baton.ErrNotAcquired)
		if l3 != nil {
			s.release(t, l3)
		}
	}

	// Second release frees it.
	if err := l.Release(opCtx(t, 10*time.Second)); err != nil {
		s.errorf(t, "reentrancy", "second Release of 2 holds = %v, want nil", err)
	}
	if st := l.State(); st != baton.Released {
		s.errorf(t, "reentrancy", "after the last Release: State() = %v, want %v", st, baton.Released)
	}
	if cause := context.Cause(l.Context()); !errors.Is(cause, baton.ErrReleased) {
		s.errorf(t, "lease context", "after the last Release: context.Cause = %v, want %v", cause, baton.ErrReleased)
	}
	l4, err := m2.TryLock(opCtx(t, 10*time.Second))
	if err != nil {
		s.errorf(t, "reentrancy", "another client's TryLock after the last Release = %v, want a lease", err)
	} else {
		if l4.Token() <= l.Token() {
			s.errorf(t, "tokens increase", "token after handoff = %d, want > %d", l4.Token(), l.Token())
		}
		s.release(t, l4)
	}

	// A third release is one too many.
	if err := l.Release(opCtx(t, 10*time.Second)); !errors.Is(err, baton.ErrNotHeld) {
		s.errorf(t, "reentrancy", "third Release of 2 holds = %v, want an error wrapping %v", err, baton.ErrNotHeld)
	}
	// The released lease's context no longer re-enters: it is cancelled.
	if l5, err := m1.Lock(l.Context()); l5 != nil || err == nil {
		s.errorf(t, "reentrancy", "Lock(released lease's context) = %v, %v, want an error", l5, err)
		if l5 != nil {
			s.release(t, l5)
		}
	}
	if got, ok := s.awaitEntries(t, name, nil, s.cleanupBound()); !ok {
		s.errorf(t, "no entry left behind", "entries of %q at the end = %q, want none", name, got)
	}
}

// grantRecord is one grant seen inside the critical section.
type grantRecord struct {
	client int
	token  uint64
	owner  string
}

// testMutualExclusion runs many clients, each on its own session, against
// one name and checks that no two hold at once and tokens increase in
// grant order (I1, I2).
func (s *suite) testMutualExclusion(t *testing.T) {
	const clients, rounds = 50, 3
	name := lockName("exclusion")
	// Clients connect one after the other, each taking and releasing the
	// lock once, so the contention below measures the lock and not a burst
	// of fifty connection handshakes and session grants.
	ms := make([]baton.Locker, clients)
	for i := range ms {
		ms[i] = s.mutex(t, s.client(t), name)
		l, err := ms[i].TryLock(opCtx(t, 10*time.Second))
		if err != nil {
			s.fatalf(t, "TryLock", "client %d: TryLock(%q) on a free lock = %v, want a lease", i, name, err)
		}
		s.release(t, l)
	}

	var (
		holders  atomic.Int32
		overlaps atomic.Int32
		mu       sync.Mutex
		grants   []grantRecord
		wg       sync.WaitGroup
	)
	ctx := opCtx(t, 120*time.Second)
	for i, m := range ms {
		wg.Go(func() {
			for range rounds {
				l, err := m.Lock(ctx)
				if err != nil {
					t.Errorf("%s: acquire: client %d: Lock(%q) = %v, want a lease", s.e.Name, i, name, err)
					return
				}
				if n := holders.Add(1); n > 1 {
					overlaps.Add(1)
					t.Errorf("%s: mutual exclusion (I1): client %d granted token %d while %d other holder(s) held %q", s.e.Name, i, l.Token(), n-1, name)
				}
				if st := l.State(); st != baton.Held {
					t.Errorf("%s: grant: client %d: State() = %v, want %v", s.e.Name, i, st, baton.Held)
				}
				mu.Lock()
				grants = append(grants, grantRecord{client: i, token: l.Token(), owner: l.Owner()})
				mu.Unlock()
				time.Sleep(time.Millisecond)
				holders.Add(-1)
				rctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				err = l.Release(rctx)
				cancel()
				if err != nil {
					t.Errorf("%s: release: client %d: Release(%q) = %v, want nil", s.e.Name, i, name, err)
					return
				}
			}
		})
	}
	wg.Wait()

	if len(grants) != clients*rounds {
		s.errorf(t, "progress", "%d grants, want %d", len(grants), clients*rounds)
	}
	owners := make(map[string]int, len(grants))
	dups := 0
	for i, g := range grants {
		if i > 0 && g.token <= grants[i-1].token {
			s.errorf(t, "tokens increase (I2)", "grant %d (client %d) has token %d after token %d (client %d)", i, g.client, g.token, grants[i-1].token, grants[i-1].client)
		}
		if j, dup := owners[g.owner]; dup {
			if dups == 0 {
				s.errorf(t, "owner unique to the grant", "grants %d and %d (tokens %d, %d) share Owner() %q", j, i, grants[j].token, g.token, g.owner)
			}
			dups++
		}
		owners[g.owner] = i
	}
	if dups > 1 {
		s.errorf(t, "owner unique to the grant", "%d of %d grants reuse an earlier grant's Owner()", dups, len(grants))
	}
	t.Logf("%s: %d grants by %d clients, %d overlaps, tokens %d…%d", s.e.Name, len(grants), clients, overlaps.Load(), first(grants).token, last(grants).token)
	if got, ok := s.awaitEntries(t, name, nil, s.cleanupBound()); !ok {
		s.errorf(t, "no entry left behind (I8)", "entries of %q after every release = %q, want none", name, got)
	}
}

func first(g []grantRecord) grantRecord {
	if len(g) == 0 {
		return grantRecord{}
	}
	return g[0]
}

func last(g []grantRecord) grantRecord {
	if len(g) == 0 {
		return grantRecord{}
	}
	return g[len(g)-1]
}

// testCancelWhileWaiting checks that a waiting Lock honours cancel and
// deadline within ReturnBound, leaves no entry, and does not stall the
// waiter queued behind it (I6, CURATOR-79).
func (s *suite) testCancelWhileWaiting(t *testing.T) {
	t.Run("AlreadyCancelled", func(t *testing.T) {
		name := lockName("cancelled")
		m := s.mutex(t, s.client(t), name)
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		start := time.Now()
		l, err := m.Lock(ctx)
		if took := time.Since(start); took > ReturnBound {
			s.errorf(t, "context (I6)", "Lock with a cancelled context took %v, want ≤ %v", took, ReturnBound)
		}
		if l != nil || !errors.Is(err, context.Canceled) {
			s.errorf(t, "context", "Lock(cancelled context) on a free lock = %v, %v, want %v", l, err, context.Canceled)
			if l != nil {
				s.release(t, l)
			}
		}
		if got, ok := s.awaitEntries(t, name, nil, s.cleanupBound()); !ok {
			s.errorf(t, "no entry left behind", "entries after Lock(cancelled context) = %q, want none", got)
		}
	})
	for _, tc := range []struct {
		name string
		want error
	}{
		{"Cancel", context.Canceled},
		{"Deadline", context.DeadlineExceeded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := lockName("cancel")
			holder := s.lock(t, s.mutex(t, s.client(t), name), name)
			before := s.entries(t, name)
			m := s.mutex(t, s.client(t), name)

			var (
				p     *pending
				ended time.Time // when the context ended
			)
			if tc.want == context.Canceled {
				p = s.lockAsync(t, t.Context(), m, nil)
				time.Sleep(100 * time.Millisecond)
				ended = time.Now()
				p.cancel()
			} else {
				ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
				defer cancel()
				ended, _ = ctx.Deadline()
				p = s.lockAsync(t, ctx, m, nil)
			}
			r, ok := p.wait(ReturnBound + 10*time.Second)
			switch {
			case !ok:
				s.fatalf(t, "context (I6)", "Lock still waiting 10s after its context ended (%v)", tc.want)
			case r.at.Sub(ended) > ReturnBound:
				s.errorf(t, "context (I6)", "Lock returned %v after its context ended, want ≤ %v", r.at.Sub(ended).Round(time.Millisecond), ReturnBound)
			}
			if r.l != nil || !errors.Is(r.err, tc.want) {
				s.errorf(t, "context", "Lock while another holds, context ended = %v, %v, want an error wrapping %v", r.l, r.err, tc.want)
			}
			if got, ok := s.awaitEntries(t, name, before, s.cleanupBound()); !ok {
				s.errorf(t, "no entry left behind (CURATOR-79)", "entries %v after the cancelled Lock = %q, want only the holder's %q", s.cleanupBound(), got, before)
			}
			if st := holder.State(); st != baton.Held {
				s.errorf(t, "context", "holder's State() after a waiter gave up = %v, want %v", st, baton.Held)
			}
			s.release(t, holder)
			if got, ok := s.awaitEntries(t, name, nil, s.cleanupBound()); !ok {
				s.errorf(t, "no entry left behind", "entries of %q at the end = %q, want none", name, got)
			}
		})
	}
	t.Run("WaiterBehindCancelled", func(t *testing.T) {
		// A waiter queued behind a cancelled waiter must still get the lock
		// when the holder releases: the cancelled entry must not stall it.
		name := lockName("behind")
		holder := s.lock(t, s.mutex(t, s.client(t), name), name)
		pa := s.lockAsync(t, t.Context(), s.mutex(t, s.client(t), name), nil)
		if !Eventually(2*time.Second, func() bool { return len(s.entries(t, name)) >= 2 }) {
			t.Logf("%s: first waiter's entry not visible after 2s; continuing", s.e.Name)
		}
		pb := s.lockAsync(t, t.Context(), s.mutex(t, s.client(t), name), nil)
		if !Eventually(2*time.Second, func() bool { return len(s.entries(t, name)) >= 3 }) {
			t.Logf("%s: second waiter's entry not visible after 2s; continuing", s.e.Name)
		}
		pa.cancel()
		if r, ok := pa.wait(ReturnBound + 10*time.Second); !ok || r.l != nil || !errors.Is(r.err, context.Canceled) {
			s.errorf(t, "context", "cancelled waiter's Lock = %v, %v (returned: %v), want %v", r.l, r.err, ok, context.Canceled)
		}
		released := time.Now()
		s.release(t, holder)
		r, ok := pb.wait(10 * time.Second)
		switch {
		case !ok:
			s.fatalf(t, "progress", "waiter behind a cancelled waiter not granted 10s after the holder released")
		case r.err != nil:
			s.fatalf(t, "progress", "waiter behind a cancelled waiter: Lock = %v, want a lease", r.err)
		}
		t.Logf("%s: waiter behind a cancelled waiter granted %v after release", s.e.Name, r.at.Sub(released).Round(time.Millisecond))
		if r.at.Sub(released) > s.cleanupBound() {
			s.errorf(t, "progress", "waiter behind a cancelled waiter granted %v after the release, want ≤ %v", r.at.Sub(released), s.cleanupBound())
		}
		s.checkFresh(t, r.l, name)
		if r.l.Token() <= holder.Token() {
			s.errorf(t, "tokens increase", "token after handoff = %d, want > %d", r.l.Token(), holder.Token())
		}
		s.release(t, r.l)
		if got, ok := s.awaitEntries(t, name, nil, s.cleanupBound()); !ok {
			s.errorf(t, "no entry left behind", "entries of %q at the end = %q, want none", name, got)
		}
	})
}

// testCancelRacingGrant releases the holder and cancels the waiter at
// nearly the same moment, at several offsets. Whichever wins, the waiter
// either returns a live lease or an error and holds nothing: after an
// error another client must get the lock, and no entry stays: a grant
// that raced the cancel is released, not leaked (I6, I8).
func (s *suite) testCancelRacingGrant(t *testing.T) {
	name := lockName("race")
	c1, c2, c3 := s.client(t), s.client(t), s.client(t)
	m1, m2, m3 := s.mutex(t, c1, name), s.mutex(t, c2, name), s.mutex(t, c3, name)
	var won, cancelled int
	for i := range 12 {
		offset := time.Duration(i) * 500 * time.Microsecond
		holder := s.lock(t, m1, name)
		p := s.lockAsync(t, t.Context(), m2, nil)
		if !Eventually(2*time.Second, func() bool { return len(s.entries(t, name)) >= 2 }) {
			t.Logf("%s: waiter's entry not visible after 2s; continuing", s.e.Name)
		}
		fired := make(chan struct{})
		go func() { // owned by this iteration, which waits for it below
			defer close(fired)
			time.Sleep(offset)
			p.cancel()
		}()
		cancelAt := time.Now().Add(offset)
		s.release(t, holder)
		r, ok := p.wait(10 * time.Second)
		<-fired
		if !ok {
			s.fatalf(t, "context (I6)", "iteration %d: Lock still running 10s after its context was cancelled", i)
		}
		if d := r.at.Sub(cancelAt); d > ReturnBound {
			s.errorf(t, "context (I6)", "iteration %d: Lock returned %v after the cancel, want ≤ %v", i, d, ReturnBound)
		}
		if r.err == nil {
			won++
			if r.l == nil {
				s.fatalf(t, "grant", "iteration %d: Lock = nil, nil", i)
			}
			if st := r.l.State(); st != baton.Held {
				s.errorf(t, "grant", "iteration %d: lease won against the cancel has State() = %v, want %v", i, st, baton.Held)
			}
			if r.l.Token() <= holder.Token() {
				s.errorf(t, "tokens increase", "iteration %d: token %d after %d", i, r.l.Token(), holder.Token())
			}
			s.release(t, r.l)
		} else {
			cancelled++
			if r.l != nil {
				s.errorf(t, "grant", "iteration %d: Lock returned both a lease and %v", i, r.err)
			}
			if !errors.Is(r.err, context.Canceled) {
				s.errorf(t, "context", "iteration %d: Lock = %v, want an error wrapping %v", i, r.err, context.Canceled)
			}
			// The waiter said no: it must hold nothing, now or later.
			var l3 *baton.Lease
			got := Eventually(s.cleanupBound(), func() bool {
				l, err := m3.TryLock(opCtx(t, 10*time.Second))
				l3 = l
				return err == nil
			})
			if !got {
				s.errorf(t, "cancel racing the grant", "iteration %d: Lock returned %v, yet no other client could acquire within %v: the grant leaked", i, r.err, s.cleanupBound())
			} else {
				s.release(t, l3)
			}
		}
		if got, ok := s.awaitEntries(t, name, nil, s.cleanupBound()); !ok {
			s.fatalf(t, "no entry left behind", "iteration %d: entries of %q = %q, want none", i, name, got)
		}
	}
	t.Logf("%s: cancel racing the grant: %d grants won, %d cancels won", s.e.Name, won, cancelled)
}

// testLost kills the holder's session from the outside and checks that the
// holder is told (Suspended allowed first, then Lost, before anyone else is
// granted), its context is cancelled with ErrLost, and the waiter gets the
// lock with a larger token within the progress bound (I5, I7).
func (s *suite) testLost(t *testing.T) {
	name := lockName("lost")
	c1, c2 := s.client(t), s.client(t)
	m1, m2 := s.mutex(t, c1, name), s.mutex(t, c2, name)
	l1 := s.lock(t, m1, name)
	_, changed := l1.Observe()
	log := recordStates(t, l1)

	bound := s.lostBound()
	p := s.lockAsync(t, opCtx(t, bound+30*time.Second), m2, l1.State)
	if !Eventually(2*time.Second, func() bool { return len(s.entries(t, name)) >= 2 }) {
		t.Logf("%s: waiter's entry not visible after 2s; continuing", s.e.Name)
	}

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
		s.errorf(t, "loss is signalled", "holder declared Lost %v after Kill, want ≤ %v (SessionTTL %v)", lostIn.Round(time.Millisecond), bound, s.e.SessionTTL)
	default:
		t.Logf("%s: holder Lost %v after Kill", s.e.Name, lostIn.Round(time.Millisecond))
	}

	if lostIn >= 0 {
		if !closed(changed) {
			s.errorf(t, "observe", "Observe() channel taken while Held not closed after the lease was lost")
		}
		states := log.states()
		if !validPath(states) || states[len(states)-1] != baton.Lost {
			s.errorf(t, "observe", "observed states %v, want Held → (Suspended ⇄ Held)* → Lost", states)
		} else {
			t.Logf("%s: observed states %v", s.e.Name, states)
		}
		if !closed(l1.Done()) {
			s.errorf(t, "lease context", "Done() not closed on a lost lease")
		}
		if err := l1.Context().Err(); err == nil {
			s.errorf(t, "lease context", "Context().Err() of a lost lease = nil, want cancelled")
		}
		if cause := context.Cause(l1.Context()); !errors.Is(cause, baton.ErrLost) {
			s.errorf(t, "lease context", "context.Cause of a lost lease = %v, want an error wrapping %v", cause, baton.ErrLost)
		}
		if err := l1.Err(); !errors.Is(err, baton.ErrLost) {
			s.errorf(t, "loss is signalled", "Err() of a lost lease = %v, want an error wrapping %v", err, baton.ErrLost)
		}
		if h := l1.Holds(); h != 0 {
			s.errorf(t, "loss is signalled", "Holds() of a lost lease = %d, want 0", h)
		}
	}

	r, ok := p.wait(bound + 30*time.Second)
	switch {
	case !ok:
		s.fatalf(t, "progress (I5)", "waiter not granted %v after the holder's session was killed", time.Since(killed))
	case r.err != nil:
		s.fatalf(t, "progress (I5)", "waiter's Lock = %v, want a lease once the holder's session died", r.err)
	}
	grantIn := r.at.Sub(killed)
	t.Logf("%s: waiter granted %v after Kill; holder was %v at that moment", s.e.Name, grantIn.Round(time.Millisecond), r.probe)
	if grantIn > bound {
		s.errorf(t, "progress (I5)", "waiter granted %v after Kill, want ≤ %v", grantIn.Round(time.Millisecond), bound)
	}
	if r.probe == baton.Held {
		s.errorf(t, "suspended before another grant (I7)", "holder still Held when the waiter's Lock returned its grant (%v after Kill)", grantIn.Round(time.Millisecond))
	}
	s.checkFresh(t, r.l, name)
	if r.l.Token() <= l1.Token() {
		s.errorf(t, "tokens increase (I2)", "token after the holder was lost = %d, want > %d", r.l.Token(), l1.Token())
	}

	// Releasing and re-entering a lost lease report the loss.
	if err := l1.Release(opCtx(t, 10*time.Second)); !errors.Is(err, baton.ErrLost) {
		s.errorf(t, "release", "Release of a lost lease = %v, want an error wrapping %v", err, baton.ErrLost)
	}
	if l, err := m1.Lock(l1.Context()); l != nil || err == nil {
		s.errorf(t, "reentrancy", "Lock(lost lease's context) = %v, %v, want an error", l, err)
		if l != nil && l != r.l {
			s.release(t, l)
		}
	}
	if st := r.l.State(); st != baton.Held {
		s.errorf(t, "release", "new holder's State() after the old holder released = %v, want %v (I9)", st, baton.Held)
	}
	s.release(t, r.l)
	if got, ok := s.awaitEntries(t, name, nil, bound); !ok {
		s.errorf(t, "no entry left behind (I8)", "entries of %q after the dead session and the release = %q, want none", name, got)
	}
}

// testWaiterSessionLost kills a waiter's session while it waits: its Lock
// must fail with ErrSessionLost and never acquire on its dead queue
// position (row 12 of docs/faults.md, CURATOR-604, etcd #19597).
func (s *suite) testWaiterSessionLost(t *testing.T) {
	name := lockName("waiterlost")
	c1, c2 := s.client(t), s.client(t)
	holder := s.lock(t, s.mutex(t, c1, name), name)
	before := s.entries(t, name)
	bound := s.lostBound()
	p := s.lockAsync(t, opCtx(t, bound+30*time.Second), s.mutex(t, c2, name), nil)
	if !Eventually(2*time.Second, func() bool { return len(s.entries(t, name)) >= 2 }) {
		t.Logf("%s: waiter's entry not visible after 2s; continuing", s.e.Name)
	}
	killed := time.Now()
	c2.Kill(t)
	r, ok := p.wait(bound + 10*time.Second)
	switch {
	case !ok:
		s.errorf(t, "waiter's session lost (CURATOR-604)", "waiter still waiting %v after its session was killed, want an error within %v", time.Since(killed).Round(time.Millisecond), bound)
	case r.l != nil:
		s.errorf(t, "waiter's session lost (CURATOR-604)", "waiter acquired (token %d) although its session was killed and the holder never released", r.l.Token())
	case !errors.Is(r.err, baton.ErrSessionLost):
		s.errorf(t, "waiter's session lost (CURATOR-604)", "waiter's Lock = %v, want an error wrapping %v", r.err, baton.ErrSessionLost)
	case r.at.Sub(killed) > bound:
		s.errorf(t, "waiter's session lost (CURATOR-604)", "waiter's Lock returned %v after Kill, want ≤ %v", r.at.Sub(killed).Round(time.Millisecond), bound)
	default:
		t.Logf("%s: waiter failed %v after Kill: %v", s.e.Name, r.at.Sub(killed).Round(time.Millisecond), r.err)
	}
	if st := holder.State(); st != baton.Held {
		s.errorf(t, "holder undisturbed", "holder's State() after a waiter's session died = %v, want %v", st, baton.Held)
	}
	if got, ok := s.awaitEntries(t, name, before, bound); !ok {
		s.errorf(t, "no entry left behind (I8)", "entries after the waiter's session died = %q, want only the holder's %q", got, before)
	}
	s.release(t, holder)
	if got, ok := s.awaitEntries(t, name, nil, s.cleanupBound()); !ok {
		s.errorf(t, "no entry left behind (I8)", "entries of %q at the end = %q, want none", name, got)
	}
}

// testClose checks that closing a client ends its leases, removes their
// entries, frees the lock for others and refuses later acquires with
// ErrClosed.
func (s *suite) testClose(t *testing.T) {
	name := lockName("close")
	c1, c2 := s.client(t), s.client(t)
	m1 := s.mutex(t, c1, name)
	l := s.lock(t, m1, name)
	if err := c1.Close(); err != nil {
		s.errorf(t, "close", "Close() with a held lease = %v, want nil", err)
	}
	if !Eventually(time.Second, func() bool { return l.State().Ended() }) {
		s.errorf(t, "close", "lease of a closed client: State() = %v 1s after Close, want %v or %v", l.State(), baton.Lost, baton.Released)
	} else if l.Context().Err() == nil {
		s.errorf(t, "lease context", "lease ended by Close has Context().Err() = nil")
	}
	for _, op := range []struct {
		name string
		f    func(context.Context) (*baton.Lease, error)
	}{{"Lock", m1.Lock}, {"TryLock", m1.TryLock}} {
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		l2, err := op.f(ctx)
		cancel()
		if l2 != nil || !errors.Is(err, baton.ErrClosed) {
			s.errorf(t, "close", "%s on a closed client = %v, %v, want an error wrapping %v", op.name, l2, err, baton.ErrClosed)
			if l2 != nil {
				s.release(t, l2)
			}
		}
	}
	m2 := s.mutex(t, c2, name)
	var l2 *baton.Lease
	if !Eventually(s.cleanupBound(), func() bool {
		l, err := m2.TryLock(opCtx(t, 10*time.Second))
		l2 = l
		return err == nil
	}) {
		s.fatalf(t, "close", "no other client could acquire %q within %v of Close", name, s.cleanupBound())
	}
	if l2.Token() <= l.Token() {
		s.errorf(t, "tokens increase", "token after Close = %d, want > %d", l2.Token(), l.Token())
	}
	s.release(t, l2)
	if got, ok := s.awaitEntries(t, name, nil, s.cleanupBound()); !ok {
		s.errorf(t, "no entry left behind (I8)", "entries of %q after Close = %q, want none", name, got)
	}
	if err := c1.Close(); err != nil && !errors.Is(err, baton.ErrClosed) {
		s.errorf(t, "close", "second Close() = %v, want nil or %v", err, baton.ErrClosed)
	}
}

// equalSets reports whether a and b, both sorted, are equal.
func equalSets(a, b []string) bool { return slices.Equal(a, b) }
