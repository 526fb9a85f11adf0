package keeper_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/clock"
	"github.com/baton-go/baton/engine"
	"github.com/baton-go/baton/engine/leasekit/keeper"
)

// epoch is where every test's virtual clock starts.
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// call is one recorded Store call: when (virtual time) and which keys.
type call struct {
	at   time.Time
	keys []string
}

// heldCall is a store call the fake keeps waiting until the test answers
// it (a slow server), or until its context ends.
type heldCall struct {
	keys  []string
	reply chan reply
}

type reply struct {
	renewed []bool
	err     error
}

// answer makes the held call return.
func (h *heldCall) answer(renewed []bool, err error) { h.reply <- reply{renewed, err} }

// fakeStore is a keeper.Store in memory that records its calls. Renew
// answers true for every ref except the keys in gone, or fails with
// renewErr; Release succeeds or fails with releaseErr. With holdRenew or
// holdRelease set, calls wait on the held channel for the test's answer.
type fakeStore struct {
	clk  clock.Clock // stamps the recorded calls
	size int
	held chan *heldCall

	mu                     sync.Mutex
	renews, releases       []call
	log                    []string // "renew k1 k2", "release k3", in call order
	gone                   map[string]bool
	renewErr, releaseErr   error
	holdRenew, holdRelease bool
}

func newFakeStore(clk clock.Clock, size int) *fakeStore {
	return &fakeStore{clk: clock.Or(clk), size: size, held: make(chan *heldCall, 16), gone: map[string]bool{}}
}

func (s *fakeStore) BatchSize() int { return s.size }

func (s *fakeStore) Renew(ctx context.Context, refs []keeper.Ref, _ time.Duration) ([]bool, error) {
	keys := keysOf(refs)
	s.mu.Lock()
	s.renews = append(s.renews, call{s.clk.Now(), keys})
	s.log = append(s.log, strings.Join(append([]string{"renew"}, keys...), " "))
	hold, err := s.holdRenew, s.renewErr
	renewed := make([]bool, len(keys))
	for i, k := range keys {
		renewed[i] = !s.gone[k]
	}
	s.mu.Unlock()
	if hold {
		return s.wait(ctx, keys)
	}
	if err != nil {
		return nil, err
	}
	return renewed, nil
}

func (s *fakeStore) Release(ctx context.Context, refs []keeper.Ref) error {
	keys := keysOf(refs)
	s.mu.Lock()
	s.releases = append(s.releases, call{s.clk.Now(), keys})
	s.log = append(s.log, strings.Join(append([]string{"release"}, keys...), " "))
	hold, err := s.holdRelease, s.releaseErr
	s.mu.Unlock()
	if hold {
		_, err = s.wait(ctx, keys)
	}
	return err
}

func (s *fakeStore) wait(ctx context.Context, keys []string) ([]bool, error) {
	h := &heldCall{keys: keys, reply: make(chan reply, 1)}
	s.held <- h
	select {
	case r := <-h.reply:
		return r.renewed, r.err
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

// set changes the store's behaviour under its lock.
func (s *fakeStore) set(f func(s *fakeStore)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(s)
}

// calls returns copies of the recorded Renew and Release calls.
func (s *fakeStore) calls() (renews, releases []call) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.renews), slices.Clone(s.releases)
}

func keysOf(refs []keeper.Ref) []string {
	keys := make([]string, len(refs))
	for i, r := range refs {
		keys[i] = r.Key
	}
	return keys
}

// harness is a keeper on a fakeStore and a Fake clock.
type harness struct {
	t   *testing.T
	clk *clock.Fake
	st  *fakeStore
	k   *keeper.Keeper
	// idle is how many timers are active when the keeper has done all it
	// can at the current virtual time: 2 (the renewer's and the
	// watchdog's), 1 while the renewer waits for a held Renew, 0 after
	// Close.
	idle int
}

const (
	ttl    = 3 * time.Second // renewal every 1s, Suspended 1.5s and Lost 2.7s after a confirmed send
	margin = 300 * time.Millisecond
)

// flatBackoff retries after 100ms, always.
var flatBackoff = baton.Backoff{Base: time.Second, Max: time.Second, Rand: func() float64 { return 0 }}

func newHarness(t *testing.T, batch int, o keeper.Options) *harness {
	t.Helper()
	clk := clock.NewFake(epoch)
	st := newFakeStore(clk, batch)
	if o.TTL == 0 {
		o.TTL = ttl
	}
	if o.Backoff.Base == 0 && o.Backoff.Rand == nil {
		o.Backoff = flatBackoff
	}
	o.Clock = clk
	k, err := keeper.New(st, o)
	if err != nil {
		t.Fatalf("New = %v", err)
	}
	h := &harness{t: t, clk: clk, st: st, k: k, idle: 2}
	t.Cleanup(func() { _ = k.Close() })
	h.settle()
	return h
}

// settle waits until the keeper is idle: h.idle timers active.
func (h *harness) settle() {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.clk.BlockUntil(ctx, h.idle); err != nil {
		h.t.Fatalf("at %v: the keeper did not settle on %d timers (%d active): %v", h.since(), h.idle, h.clk.Timers(), err)
	}
}

// stepTo moves the virtual clock to epoch+d one timer at a time, letting
// the keeper settle after each, so that every event happens at its own
// moment and not at the end of a long jump.
func (h *harness) stepTo(d time.Duration) {
	h.t.Helper()
	target := epoch.Add(d)
	for {
		next, ok := h.clk.Next()
		if !ok || next.After(target) {
			break
		}
		h.clk.Set(next)
		h.settle()
	}
	h.clk.Set(target)
}

// since returns the virtual time since epoch.
func (h *harness) since() time.Duration { return h.clk.Since(epoch) }

// hold holds a renewable lease on key, sent at epoch+sent.
func (h *harness) hold(key string, sent time.Duration) *baton.Lease {
	h.t.Helper()
	return h.holdFixed(key, sent, 0)
}

func (h *harness) holdFixed(key string, sent, fixed time.Duration) *baton.Lease {
	h.t.Helper()
	l, err := h.k.Hold(context.Background(), engine.Grant{Name: key, Engine: "fake", Owner: "o-" + key},
		keeper.Ref{Key: key, Owner: "o-" + key}, epoch.Add(sent), fixed)
	if err != nil {
		h.t.Fatalf("Hold(%q) = %v", key, err)
	}
	h.settle()
	return l
}

// nextHeld returns the next call the store holds.
func (h *harness) nextHeld() *heldCall {
	h.t.Helper()
	select {
	case c := <-h.st.held:
		return c
	case <-time.After(10 * time.Second):
		h.t.Fatalf("at %v: no held store call", h.since())
		return nil
	}
}

// waitFor polls cond, in real time, until it holds: for effects of a held
// call's answer, which move no timer.
func (h *harness) waitFor(what string, cond func() bool) {
	h.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			h.t.Fatalf("at %v: still waiting for %s", h.since(), what)
		}
		time.Sleep(time.Millisecond)
	}
}

// wantState checks a lease's state at the current virtual time.
func (h *harness) wantState(l *baton.Lease, want baton.State) {
	h.t.Helper()
	if got := l.State(); got != want {
		h.t.Fatalf("at %v: %s State() = %v (%v), want %v", h.since(), l.Name(), got, l.Err(), want)
	}
}

// calledInOrder returns the store's calls in order, as "renew k…" and
// "release k…".
func (s *fakeStore) calledInOrder() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.log)
}
