// Package batontest is baton's conformance suite: a test any engine — one of
// baton's or a user's — runs against itself to check that it keeps the
// contract of package baton (fencing tokens, lease states, reentrancy,
// context handling, naming, hygiene).
//
// Like testing/fstest.TestFS, the suite treats the engine as a black box: it
// sees only the baton.Locker and *baton.Lease it is handed, a way to list a
// lock's remote entries, and a way to make a client's session die from the
// outside. It reports every violation with t.Errorf, naming the engine and
// the invariant, and keeps going, so one run shows the whole picture.
//
// Invariants carry the IDs of the fault matrix (docs/faults.md in the baton
// repository): I1 mutual exclusion, I2 tokens strictly increase per name,
// I5 progress after a holder dies, I6 an acquire honours its context, I7
// a holder is told Suspended or Lost before anyone else is granted, I8 no
// entry or goroutine left behind, I9 a release removes only its own grant.
//
// The suite needs real servers: it waits for session expiry, counts remote
// entries and measures how fast a cancelled acquire returns. Each subtest
// works on a lock name of its own under "conformance/".
package batontest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/baton-go/baton"
)

// Engine describes an engine under test.
type Engine struct {
	// Name names the engine in every message ("zk", "etcd", …).
	Name string

	// NewClient returns a fresh client with its own session(s), as a
	// separate process would have. The suite calls it from the test
	// goroutine and closes the client with Client.Close in t.Cleanup;
	// anything else the client needs torn down (a fault proxy) the
	// function registers with t.Cleanup itself, and it then runs after
	// Close.
	NewClient func(t testing.TB) Client

	// Entries lists the remote entries (queue nodes, keys, rows) that
	// currently exist for lock name, in any order, read through a client
	// that is not under test. The suite compares snapshots of it, so the
	// strings only need to be stable and distinct.
	Entries func(t testing.TB, name string) []string

	// SessionTTL bounds how long after Client.Kill the server ends the
	// killed session: the session timeout or lease TTL plus the server's
	// own expiry granularity. The holder must be Lost within it (plus
	// slack) and the next waiter granted within SessionTTL +
	// max(0.5s, SessionTTL/4) (I5).
	SessionTTL time.Duration

	// CleanupBound is how long the engine may take to remove the entries
	// of a released lease or of an acquire that returned an error, when
	// longer than the default CleanupBound: an engine that leaves a key
	// on a node whose delete timed out, to expire there, needs its TTL.
	CleanupBound time.Duration

	// SemaphoreEntries lists the remote entries of the semaphore called
	// name (its permits' entries and any guard entries), like Entries.
	// Nil means Entries(t, name); set it when a semaphore's entries live
	// below the name rather than directly under it (Curator's layout has
	// "<name>/leases" and "<name>/locks").
	SemaphoreEntries func(t testing.TB, name string) []string
}

// Client is one client of the engine under test.
type Client interface {
	// Mutex returns the exclusive lock called name. An invalid name must
	// fail here with an error wrapping baton.ErrInvalidName.
	Mutex(name string) (baton.Locker, error)

	// Kill cuts this client off from the server as a partition would (for
	// example by blackholing the client's fault proxy), so that its
	// session can no longer be renewed and the server ends it after
	// SessionTTL. It must not tell the client anything: the suite checks
	// that the client notices by itself, and that it says Suspended or
	// Lost before the server can grant the lock to someone else (I7). An
	// outside revocation (etcd lease revoke) cannot meet I7 and is not a
	// valid Kill. A killed client is only closed afterwards.
	Kill(t testing.TB)

	// Close closes the client. The suite calls it once per client, from
	// t.Cleanup, and also in the Close subtest; a second Close may return
	// nil or an error wrapping baton.ErrClosed.
	Close() error
}

// Bounds of the contract the suite enforces.
const (
	// ReturnBound is how soon after its context ends an acquire must
	// return (I6).
	ReturnBound = 250 * time.Millisecond
	// TryLockBound is how long a failing TryLock may take: one attempt,
	// a few round trips, never a wait for the holder.
	TryLockBound = time.Second
	// CleanupBound is how long a reachable engine may take to remove the
	// entry of an acquire that returned an error.
	CleanupBound = 2 * time.Second
)

// TestMutex runs the exclusive-lock conformance subtests against e.
func TestMutex(t *testing.T, e Engine) {
	t.Helper()
	s := newSuite(t, e)
	for _, st := range []struct {
		name string
		run  func(*testing.T)
	}{
		{"InvalidNames", s.testInvalidNames},
		{"ValidNames", s.testValidNames},
		{"TryLock", s.testTryLock},
		{"Release", s.testRelease},
		{"Reentrancy", s.testReentrancy},
		{"MutualExclusion", s.testMutualExclusion},
		{"CancelWhileWaiting", s.testCancelWhileWaiting},
		{"CancelRacingGrant", s.testCancelRacingGrant},
		{"Lost", s.testLost},
		{"WaiterSessionLost", s.testWaiterSessionLost},
		{"Close", s.testClose},
	} {
		t.Run(st.name, st.run)
	}
}

// suite carries the engine through the subtests.
type suite struct{ e Engine }

// newSuite checks e's description or stops the test.
func newSuite(t *testing.T, e Engine) *suite {
	t.Helper()
	switch {
	case e.Name == "":
		t.Fatal("batontest: Engine.Name is empty")
	case e.NewClient == nil || e.Entries == nil:
		t.Fatalf("batontest: engine %s: NewClient and Entries are required", e.Name)
	case e.SessionTTL <= 0:
		t.Fatalf("batontest: engine %s: SessionTTL = %v, want > 0", e.Name, e.SessionTTL)
	}
	return &suite{e: e}
}

// subtest is one named conformance check.
type subtest struct {
	name string
	run  func(*testing.T)
}

// runAll runs the subtests in order.
func runAll(t *testing.T, sts []subtest) {
	for _, st := range sts {
		t.Run(st.name, st.run)
	}
}

// errorf reports a violation of invariant, prefixed with the engine name.
func (s *suite) errorf(t testing.TB, invariant, format string, args ...any) {
	t.Helper()
	t.Errorf("%s: %s: %s", s.e.Name, invariant, fmt.Sprintf(format, args...))
}

// fatalf is errorf that stops the subtest; test goroutine only.
func (s *suite) fatalf(t testing.TB, invariant, format string, args ...any) {
	t.Helper()
	t.Fatalf("%s: %s: %s", s.e.Name, invariant, fmt.Sprintf(format, args...))
}

// client returns a new client closed at the end of the test.
func (s *suite) client(t *testing.T) Client {
	t.Helper()
	c := s.e.NewClient(t)
	if c == nil {
		t.Fatalf("%s: NewClient returned nil", s.e.Name)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil && !errors.Is(err, baton.ErrClosed) {
			t.Errorf("%s: Close() = %v, want nil", s.e.Name, err)
		}
	})
	return c
}

// mutex returns c's mutex called name or stops the test.
func (s *suite) mutex(t *testing.T, c Client, name string) baton.Locker {
	t.Helper()
	m, err := c.Mutex(name)
	if err != nil {
		s.fatalf(t, "valid name", "Mutex(%q) = %v, want nil", name, err)
	}
	if m == nil {
		s.fatalf(t, "valid name", "Mutex(%q) = nil, nil", name)
	}
	return m
}

// lockName returns a lock name unique to this run of test.
func lockName(test string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "conformance/" + test + "/" + hex.EncodeToString(b[:])
}

// opCtx is the context of one blocking call in a subtest: bounded, so a
// hung engine fails the test instead of hanging it.
func opCtx(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}

// lock acquires m with a bounded wait or stops the test.
func (s *suite) lock(t *testing.T, m baton.Locker, name string) *baton.Lease {
	t.Helper()
	l, err := m.Lock(opCtx(t, 10*time.Second))
	if err != nil || l == nil {
		s.fatalf(t, "acquire", "Lock(%q) = %v, %v, want a lease", name, l, err)
	}
	s.checkFresh(t, l, name)
	return l
}

// checkFresh checks what every new grant carries.
func (s *suite) checkFresh(t testing.TB, l *baton.Lease, name string) {
	t.Helper()
	if st := l.State(); st != baton.Held {
		s.errorf(t, "grant", "new lease of %q: State() = %v, want %v", name, st, baton.Held)
	}
	if h := l.Holds(); h != 1 {
		s.errorf(t, "grant", "new lease of %q: Holds() = %d, want 1", name, h)
	}
	if n := l.Name(); n != strings.Trim(name, "/") {
		s.errorf(t, "grant", "new lease of %q: Name() = %q, want %q", name, n, strings.Trim(name, "/"))
	}
	if l.Owner() == "" {
		s.errorf(t, "grant", "new lease of %q: Owner() is empty, want an identity unique to the grant", name)
	}
	if l.Engine() == "" {
		s.errorf(t, "grant", "new lease of %q: Engine() is empty", name)
	}
	if err := l.Context().Err(); err != nil {
		s.errorf(t, "grant", "new lease of %q: Context().Err() = %v, want nil", name, err)
	}
}

// release releases l with a fresh bounded context and reports an error.
func (s *suite) release(t testing.TB, l *baton.Lease) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := l.Release(ctx); err != nil {
		s.errorf(t, "release", "Release(%q) = %v, want nil", l.Name(), err)
	}
}

// entries lists name's remote entries, sorted.
func (s *suite) entries(t testing.TB, name string) []string {
	t.Helper()
	return sortedClone(s.e.Entries(t, name))
}

// sortedClone returns a sorted copy of es.
func sortedClone(es []string) []string {
	es = slices.Clone(es)
	slices.Sort(es)
	return es
}

// awaitEntries polls name's entries until they equal want (as sets) or
// within passes, and returns the last listing and whether it matched.
func (s *suite) awaitEntries(t testing.TB, name string, want []string, within time.Duration) ([]string, bool) {
	t.Helper()
	return awaitList(t, s.entries, name, want, within)
}

// awaitList is awaitEntries over any listing of name's entries.
func awaitList(t testing.TB, list func(testing.TB, string) []string, name string, want []string, within time.Duration) ([]string, bool) {
	t.Helper()
	want = slices.Sorted(slices.Values(want))
	deadline := time.Now().Add(within)
	for {
		got := list(t, name)
		if slices.Equal(got, want) {
			return got, true
		}
		if time.Now().After(deadline) {
			return got, false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Eventually polls cond every 10ms until it holds (true) or within
// passes (false).
func Eventually(within time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(within)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// lostBound is how long after Kill the holder may take to be told Lost, and
// the next waiter to be granted (I5).
func (s *suite) lostBound() time.Duration {
	return s.e.SessionTTL + max(500*time.Millisecond, s.e.SessionTTL/4)
}

// result is what an asynchronous Lock returned.
type result struct {
	l     *baton.Lease
	err   error
	at    time.Time   // when Lock returned
	probe baton.State // probe's answer right after Lock returned
}

// pending is a Lock running in its own goroutine. Its owner is the test:
// Cleanup cancels it, waits for it and releases a lease it may have got.
type pending struct {
	cancel context.CancelFunc
	ch     chan result
	res    *result
}

// lockAsync starts m.Lock(ctx) in a goroutine. probe, if set, runs right
// after Lock returns, before anything else can happen in the test.
func (s *suite) lockAsync(t *testing.T, ctx context.Context, m baton.Locker, probe func() baton.State) *pending {
	ctx, cancel := context.WithCancel(ctx)
	p := &pending{cancel: cancel, ch: make(chan result, 1)}
	go func() {
		l, err := m.Lock(ctx)
		r := result{l: l, err: err, at: time.Now()}
		if probe != nil {
			r.probe = probe()
		}
		p.ch <- r
	}()
	t.Cleanup(func() {
		cancel()
		r, ok := p.wait(30 * time.Second)
		if !ok {
			t.Errorf("%s: context: Lock still running 30s after its context was cancelled", s.e.Name)
			return
		}
		if r.l != nil && !r.l.State().Ended() {
			ctx, c := context.WithTimeout(context.Background(), 5*time.Second)
			defer c()
			_ = r.l.Release(ctx) // tidying up after a failed check; the check reported already
		}
	})
	return p
}

// wait returns the Lock's result, or false if it has not returned within d.
// It is called from the test goroutine only.
func (p *pending) wait(d time.Duration) (result, bool) {
	if p.res != nil {
		return *p.res, true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case r := <-p.ch:
		p.res = &r
		return r, true
	case <-t.C:
		return result{}, false
	}
}

// stateLog records every state a lease goes through, via Observe.
type stateLog struct {
	ch   chan []baton.State
	stop chan struct{}
}

// recordStates follows l's states until it ends or the test ends. Its
// goroutine is owned by the test: Cleanup stops it and waits for it.
func recordStates(t *testing.T, l *baton.Lease) *stateLog {
	sl := &stateLog{ch: make(chan []baton.State, 1), stop: make(chan struct{})}
	go func() {
		var seen []baton.State
		for {
			st, changed := l.Observe()
			if len(seen) == 0 || seen[len(seen)-1] != st {
				seen = append(seen, st)
			}
			if st.Ended() {
				break
			}
			select {
			case <-changed:
				continue
			case <-sl.stop:
			}
			break
		}
		sl.ch <- seen
	}()
	t.Cleanup(func() { sl.states() })
	return sl
}

// states stops the recorder and returns what it saw. Call it once the
// lease has ended (or from Cleanup).
func (sl *stateLog) states() []baton.State {
	select {
	case <-sl.stop:
	default:
		close(sl.stop)
	}
	seen, ok := <-sl.ch
	if ok {
		close(sl.ch)
	}
	return seen
}

// validPath reports whether states is a legal life of a lease from its
// grant: Held → (Suspended ⇄ Held)* → Lost | Released.
func validPath(states []baton.State) bool {
	if len(states) == 0 || states[0] != baton.Held {
		return false
	}
	for i := 1; i < len(states); i++ {
		prev, cur := states[i-1], states[i]
		switch {
		case prev.Ended():
			return false
		case prev == baton.Held && (cur == baton.Suspended || cur.Ended()):
		case prev == baton.Suspended && (cur == baton.Held || cur.Ended()):
		default:
			return false
		}
	}
	return true
}

// closed reports whether ch is closed.
func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// As converts an engine constructor's result into the suite's interface I
// (baton.Locker, RW, Sem), keeping a failed constructor's nil pointer out
// of the interface, so that an engine's Client adapter is one line per
// recipe: return batontest.As[batontest.RW](c.Client.RWMutex(name)). It
// panics if T does not implement I: a bug in the adapter, not in the
// engine.
func As[I, T any](v T, err error) (I, error) {
	var zero I
	if err != nil {
		return zero, err
	}
	return any(v).(I), nil
}

// cleanupBound is the engine's CleanupBound, at least the default.
func (s *suite) cleanupBound() time.Duration { return max(s.e.CleanupBound, CleanupBound) }
