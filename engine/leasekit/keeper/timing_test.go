package keeper_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/engine"
	"github.com/baton-go/baton/engine/leasekit/keeper"
)

// These tests run the keeper on a fakeStore and a Fake clock: every
// moment they assert is exact virtual time, and none waits for a real TTL.

var errDown = errors.New("fake store: down")

// wantCalls checks recorded calls against want, each given as a time since
// epoch and the keys of the call.
func wantCalls(t *testing.T, what string, got []call, want []call) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d calls %v, want %d %v", what, len(got), got, len(want), want)
	}
	for i := range want {
		if !got[i].at.Equal(want[i].at) || !slices.Equal(got[i].keys, want[i].keys) {
			t.Errorf("%s call %d = %v at %v, want %v at %v", what, i, got[i].keys, got[i].at.Sub(epoch), want[i].keys, want[i].at.Sub(epoch))
		}
	}
}

// wantLost checks that l is Lost with a cause wrapping baton.ErrLost and
// cause, in its context and in Err.
func wantLost(t *testing.T, l *baton.Lease, cause error) {
	t.Helper()
	if st := l.State(); st != baton.Lost {
		t.Fatalf("%s State() = %v, want %v", l.Name(), st, baton.Lost)
	}
	for _, err := range []error{context.Cause(l.Context()), l.Err()} {
		if !errors.Is(err, baton.ErrLost) || !errors.Is(err, cause) {
			t.Errorf("%s ended with %v, want an error wrapping %v and %v", l.Name(), err, baton.ErrLost, cause)
		}
	}
}

// TestRenewalRounds holds 7 leases with BatchSize 3: every TTL/3 one round
// of 3 Renew calls (3, 3 and 1 refs) renews each lease once.
func TestRenewalRounds(t *testing.T) {
	h := newHarness(t, 3, keeper.Options{})
	var leases []*baton.Lease
	for i := range 7 {
		leases = append(leases, h.hold(fmt.Sprintf("k%d", i), 0))
	}
	h.stepTo(time.Second - 1)
	if renews, _ := h.st.calls(); len(renews) != 0 {
		t.Fatalf("Renew calls before TTL/3: %v, want none", renews)
	}
	h.stepTo(10 * time.Second)
	renews, _ := h.st.calls()
	if len(renews) != 30 {
		t.Fatalf("%d Renew calls in 10 rounds, want 30: %v", len(renews), renews)
	}
	for r := range 10 {
		at := epoch.Add(time.Duration(r+1) * time.Second)
		var keys []string
		for i, c := range renews[3*r : 3*r+3] {
			if !c.at.Equal(at) || len(c.keys) != []int{3, 3, 1}[i] {
				t.Errorf("round %d call %d: %d refs at %v, want %d at %v", r, i, len(c.keys), c.at.Sub(epoch), []int{3, 3, 1}[i], at.Sub(epoch))
			}
			keys = append(keys, c.keys...)
		}
		slices.Sort(keys)
		if want := []string{"k0", "k1", "k2", "k3", "k4", "k5", "k6"}; !slices.Equal(keys, want) {
			t.Errorf("round %d renewed %v, want each of %v once", r, keys, want)
		}
	}
	for _, l := range leases {
		h.wantState(l, baton.Held)
	}
	s := h.k.Stats()
	if s.Held != 7 || s.Rounds != 10 || s.RenewBatches != 30 || s.RenewFailures != 0 || s.Suspended != 0 || s.Lost != 0 || s.LastRenewError != nil {
		t.Errorf("Stats() = %+v, want 7 held, 10 rounds, 30 batches, no failure, suspension or loss", s)
	}
}

// TestRenewOldestFirst: a round's batches take the leases in the order of
// their last confirmed send, oldest first, so the most urgent are renewed
// first.
func TestRenewOldestFirst(t *testing.T) {
	h := newHarness(t, 2, keeper.Options{})
	for _, l := range []struct {
		key  string
		sent time.Duration
	}{{"a", -50}, {"b", -10}, {"c", -30}, {"d", -20}, {"e", -40}} {
		h.hold(l.key, l.sent*time.Millisecond)
	}
	h.stepTo(time.Second)
	renews, _ := h.st.calls()
	at := epoch.Add(time.Second)
	wantCalls(t, "Renew", renews, []call{{at, []string{"a", "e"}}, {at, []string{"c", "d"}}, {at, []string{"b"}}})
}

// TestSuspendedThenHeld: with the store failing, a lease turns Suspended
// exactly TTL/2 after its last confirmed send, and Held again with the
// next confirmed renewal (the renewer retries every 100ms meanwhile).
func TestSuspendedThenHeld(t *testing.T) {
	h := newHarness(t, 10, keeper.Options{})
	l := h.hold("a", 0)
	h.st.set(func(s *fakeStore) { s.renewErr = errDown })
	_, changed := l.Observe()
	h.stepTo(1500*time.Millisecond - 1)
	h.wantState(l, baton.Held)
	select {
	case <-changed:
		t.Fatalf("the lease changed state before TTL/2: %v", l.State())
	default:
	}
	h.stepTo(1500 * time.Millisecond)
	h.wantState(l, baton.Suspended)
	h.st.set(func(s *fakeStore) { s.renewErr = nil })
	h.stepTo(1600*time.Millisecond - 1)
	h.wantState(l, baton.Suspended)
	h.stepTo(1600 * time.Millisecond)
	h.wantState(l, baton.Held)
	h.stepTo(5 * time.Second)
	h.wantState(l, baton.Held)

	renews, _ := h.st.calls()
	var want []call
	for ms := 1000; ms <= 1600; ms += 100 { // retries every 100ms until one is confirmed
		want = append(want, call{epoch.Add(time.Duration(ms) * time.Millisecond), []string{"a"}})
	}
	for _, s := range []time.Duration{2600, 3600, 4600} { // then every TTL/3 from that round
		want = append(want, call{epoch.Add(s * time.Millisecond), []string{"a"}})
	}
	wantCalls(t, "Renew", renews, want)
	s := h.k.Stats()
	if s.Suspended != 1 || s.RenewFailures != 6 || !errors.Is(s.LastRenewError, errDown) || s.Lost != 0 || s.Held != 1 {
		t.Errorf("Stats() = %+v, want 1 suspension, 6 failures (last %v), no loss, 1 held", s, errDown)
	}
}

// TestLostAtDeadline: with no renewal confirmed, the lease is Lost at
// sent+TTL−DriftMargin, not one tick before, and so before the server can
// expire it at sent+TTL; its release is queued at once.
func TestLostAtDeadline(t *testing.T) {
	h := newHarness(t, 10, keeper.Options{})
	if got := h.k.DriftMargin(); got != margin {
		t.Fatalf("DriftMargin() = %v, want the default max(TTL/10, 100ms) = %v", got, margin)
	}
	l := h.hold("a", 0)
	h.st.set(func(s *fakeStore) { s.renewErr = errDown })
	h.stepTo(ttl - margin - 1)
	h.wantState(l, baton.Suspended)
	h.stepTo(ttl - margin)
	wantLost(t, l, keeper.ErrDeadline)
	if h.since() >= ttl {
		t.Errorf("Lost at %v, want before the server-side expiry at %v", h.since(), ttl)
	}
	_, releases := h.st.calls()
	wantCalls(t, "Release", releases, []call{{epoch.Add(ttl - margin), []string{"a"}}})
	s := h.k.Stats()
	if s.Lost != 1 || s.Suspended != 1 || s.Held != 0 || s.Releases != 1 {
		t.Errorf("Stats() = %+v, want 1 lost, 1 suspended, 0 held, 1 release", s)
	}
}

// TestLostWhenGone: a renewal the store answers false for ends the lease
// at once (ErrGone); the other leases of the batch stay Held.
func TestLostWhenGone(t *testing.T) {
	h := newHarness(t, 10, keeper.Options{})
	a, b := h.hold("a", 0), h.hold("b", 0)
	h.st.set(func(s *fakeStore) { s.gone["a"] = true })
	h.stepTo(time.Second - 1)
	h.wantState(a, baton.Held)
	h.stepTo(time.Second)
	wantLost(t, a, keeper.ErrGone)
	h.wantState(b, baton.Held)
	h.stepTo(3 * time.Second)
	h.wantState(b, baton.Held)
	if _, releases := h.st.calls(); len(releases) != 0 {
		t.Errorf("Release calls %v, want none: the store reported the lease gone", releases)
	}
	if s := h.k.Stats(); s.Lost != 1 || s.Held != 1 {
		t.Errorf("Stats() = %+v, want 1 lost, 1 held", s)
	}
}

// TestGoneWhileReleasing: a "gone" answer for a lease whose own Release is
// in flight is the release's doing, not a loss.
func TestGoneWhileReleasing(t *testing.T) {
	h := newHarness(t, 10, keeper.Options{})
	l := h.hold("a", 0)
	h.st.set(func(s *fakeStore) { s.holdRelease, s.gone["a"] = true, true })
	done := make(chan error, 1)
	go func() { done <- l.Release(context.Background()) }()
	rel := h.nextHeld()
	h.stepTo(time.Second) // the round's Renew answers false for a
	if renews, _ := h.st.calls(); len(renews) != 1 {
		t.Fatalf("Renew calls %v, want 1", renews)
	}
	h.wantState(l, baton.Held)
	rel.answer(nil, nil)
	if err := <-done; err != nil {
		t.Fatalf("Release() = %v, want nil", err)
	}
	h.wantState(l, baton.Released)
	if s := h.k.Stats(); s.Lost != 0 || s.Held != 0 || s.Releases != 1 {
		t.Errorf("Stats() = %+v, want no loss, 0 held, 1 release", s)
	}
}

// TestLateAnswerExtends: a Renew answered after the renewer stopped
// waiting, but before the lease's deadline, still extends the lease from
// its send time.
func TestLateAnswerExtends(t *testing.T) {
	h := newHarness(t, 10, keeper.Options{})
	l := h.hold("a", 0)
	h.st.set(func(s *fakeStore) { s.holdRenew = true })
	h.idle = 1 // the renewer waits for the held Renew
	h.stepTo(time.Second)
	late := h.nextHeld()
	h.st.set(func(s *fakeStore) { s.holdRenew, s.renewErr = false, errDown }) // the retries fail
	// The renewer waits until TTL/2 after the send (1s+1.5s), then retries.
	h.stepTo(2500*time.Millisecond - 1)
	h.wantState(l, baton.Suspended)
	if s := h.k.Stats(); s.RenewFailures != 0 {
		t.Fatalf("Stats() = %+v before the wait ended, want no failure", s)
	}
	h.idle = 2
	h.stepTo(2500 * time.Millisecond)
	if s := h.k.Stats(); s.RenewFailures != 2 || s.RenewBatches != 2 {
		t.Fatalf("Stats() = %+v, want 2 batches failed (the late one and its retry)", s)
	}
	h.stepTo(2600 * time.Millisecond)
	late.answer([]bool{true}, nil)
	h.waitFor("the late answer to be applied", func() bool { return h.k.Stats().LateAnswers == 1 })
	// Sent at 1s and confirmed: Lost at 1s+TTL−margin, not at TTL−margin.
	h.stepTo(time.Second + ttl - margin - 1)
	h.wantState(l, baton.Suspended)
	h.stepTo(time.Second + ttl - margin)
	wantLost(t, l, keeper.ErrDeadline)
}

// TestFixedLease: a lease with a fixed lease time is never renewed nor
// suspended, and is Lost at sent+fixed−min(DriftMargin, fixed/4).
func TestFixedLease(t *testing.T) {
	h := newHarness(t, 10, keeper.Options{})
	long := h.holdFixed("long", 0, 2*time.Second)          // margin 300ms
	short := h.holdFixed("short", 0, 400*time.Millisecond) // margin 100ms
	h.stepTo(300*time.Millisecond - 1)
	h.wantState(short, baton.Held)
	h.stepTo(300 * time.Millisecond)
	wantLost(t, short, keeper.ErrFixedExpired)
	h.stepTo(1700*time.Millisecond - 1)
	h.wantState(long, baton.Held)
	h.stepTo(1700 * time.Millisecond)
	wantLost(t, long, keeper.ErrFixedExpired)
	h.stepTo(5 * time.Second)
	renews, releases := h.st.calls()
	if len(renews) != 0 || len(releases) != 0 {
		t.Errorf("Renew calls %v, Release calls %v, want none", renews, releases)
	}
	if s := h.k.Stats(); s.Rounds != 0 || s.Suspended != 0 || s.Lost != 2 || s.Held != 0 {
		t.Errorf("Stats() = %+v, want no round, no suspension, 2 lost, 0 held", s)
	}
}

// TestAbandonRetries: an abandoned grant's owner-checked release is sent
// at once, retried with the keeper's backoff while the store fails, and
// given up once the lease must have expired (TTL + TTL/3 after Abandon).
func TestAbandonRetries(t *testing.T) {
	b := baton.Backoff{Base: 100 * time.Millisecond, Max: time.Second, Rand: func() float64 { return 0.5 }}
	h := newHarness(t, 10, keeper.Options{Backoff: b})
	h.stepTo(200 * time.Millisecond)
	h.st.set(func(s *fakeStore) { s.releaseErr = errDown })
	h.k.Abandon(keeper.Ref{Key: "x", Owner: "o"})
	h.settle()
	h.stepTo(10 * time.Second)
	_, releases := h.st.calls()
	var want []call
	start := epoch.Add(200 * time.Millisecond)
	for at, tries := start, 0; !at.After(start.Add(ttl + ttl/3)); {
		want = append(want, call{at, []string{"x"}})
		tries++
		at = at.Add(b.Delay(tries))
	}
	wantCalls(t, "Release", releases, want)
	if len(want) < 5 {
		t.Fatalf("only %d attempts expected: the test's backoff is too slow to show retries", len(want))
	}
	if s := h.k.Stats(); s.Releases != 0 {
		t.Errorf("Stats().Releases = %d, want 0", s.Releases)
	}
}

// TestReleasedOnceAnswered: an abandoned grant's release, and a lease's
// own Release that failed, are retried until the store confirms one, and
// not after. The failed Release ends its lease Lost at once, and the lease
// is no longer renewed: before, it stayed held and renewed until its
// process ended unless the caller retried the release.
func TestReleasedOnceAnswered(t *testing.T) {
	for _, tc := range []struct {
		name  string
		start func(t *testing.T, h *harness) (first []call)
	}{
		{"abandoned", func(t *testing.T, h *harness) []call {
			h.k.Abandon(keeper.Ref{Key: "x", Owner: "o"})
			return []call{{epoch, []string{"x"}}}
		}},
		{"failed release", func(t *testing.T, h *harness) []call {
			l := h.hold("x", 0)
			if err := l.Release(context.Background()); !errors.Is(err, errDown) {
				t.Fatalf("Release() = %v, want an error wrapping %v", err, errDown)
			}
			wantLost(t, l, errDown)
			return []call{{epoch, []string{"x"}}, {epoch, []string{"x"}}} // its own, then the queued one
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, 10, keeper.Options{}) // retries every 100ms
			h.st.set(func(s *fakeStore) { s.releaseErr = errDown })
			want := tc.start(t, h)
			h.settle()
			h.stepTo(100 * time.Millisecond)
			h.st.set(func(s *fakeStore) { s.releaseErr = nil })
			h.stepTo(5 * time.Second)
			renews, releases := h.st.calls()
			wantCalls(t, "Release", releases, append(want,
				call{epoch.Add(100 * time.Millisecond), []string{"x"}}, call{epoch.Add(200 * time.Millisecond), []string{"x"}}))
			if len(renews) != 0 {
				t.Errorf("Renew calls %v, want none", renews)
			}
			if s := h.k.Stats(); s.Releases != 1 || s.Held != 0 {
				t.Errorf("Stats() = %+v, want 1 release, 0 held", s)
			}
		})
	}
}

// TestSlowReleaseWaitedFor: a release the store is slow to answer is not
// cut short while its lease may still be live on the server (until TTL +
// TTL/3 after Abandon): it is sent once and its late answer counts.
// Cutting it at TTL/2 closed the connection it was sent on, and the retry,
// on a cold connection through a slow link, took longer still.
func TestSlowReleaseWaitedFor(t *testing.T) {
	h := newHarness(t, 10, keeper.Options{})
	h.st.set(func(s *fakeStore) { s.holdRelease = true })
	h.k.Abandon(keeper.Ref{Key: "x", Owner: "o"})
	x := h.nextHeld()
	h.idle = 1 // the renewer waits for the store, not on its timer
	h.stepTo(ttl + ttl/3 - time.Millisecond)
	x.answer(nil, nil)
	h.waitFor("the release answered", func() bool { return h.k.Stats().Releases == 1 })
	_, releases := h.st.calls()
	wantCalls(t, "Release", releases, []call{{epoch, []string{"x"}}})
}

// TestHoldTooLate: a grant whose deadline has passed when Hold is called
// is refused (ErrLost, ErrDeadline) and released at once; one a tick
// younger is held, and lost a tick later.
func TestHoldTooLate(t *testing.T) {
	h := newHarness(t, 10, keeper.Options{})
	grant := engine.Grant{Name: "late", Engine: "fake", Owner: "o"}
	_, err := h.k.Hold(context.Background(), grant, keeper.Ref{Key: "late", Owner: "o"}, epoch.Add(-ttl+margin), 0)
	if !errors.Is(err, baton.ErrLost) || !errors.Is(err, keeper.ErrDeadline) {
		t.Fatalf("Hold(deadline now) = %v, want an error wrapping %v and %v", err, baton.ErrLost, keeper.ErrDeadline)
	}
	h.settle()
	_, releases := h.st.calls()
	wantCalls(t, "Release", releases, []call{{epoch, []string{"late"}}})

	l := h.hold("young", -ttl+margin+1)
	h.wantState(l, baton.Suspended) // past TTL/2 already
	h.stepTo(1)
	wantLost(t, l, keeper.ErrDeadline)
	if s := h.k.Stats(); s.Held != 0 || s.Lost != 1 || s.Releases != 2 {
		t.Errorf("Stats() = %+v, want 0 held, 1 lost (Hold's refusal is not a loss), 2 releases", s)
	}
}

// TestHoldAfterClose: Hold on a closed keeper fails with ErrClosed and
// sends nothing; Close twice fails the second time.
func TestHoldAfterClose(t *testing.T) {
	h := newHarness(t, 10, keeper.Options{})
	if err := h.k.Close(); err != nil {
		t.Fatalf("Close() = %v", err)
	}
	_, err := h.k.Hold(context.Background(), engine.Grant{Name: "a"}, keeper.Ref{Key: "a", Owner: "o"}, epoch, 0)
	if !errors.Is(err, baton.ErrClosed) {
		t.Errorf("Hold after Close = %v, want %v", err, baton.ErrClosed)
	}
	h.k.Abandon(keeper.Ref{Key: "b", Owner: "o"})
	if renews, releases := h.st.calls(); len(renews) != 0 || len(releases) != 0 {
		t.Errorf("store calls after Close: %v, %v, want none", renews, releases)
	}
	if err := h.k.Close(); !errors.Is(err, baton.ErrClosed) {
		t.Errorf("second Close() = %v, want %v", err, baton.ErrClosed)
	}
	if n := h.clk.Timers(); n != 0 {
		t.Errorf("%d timers active after Close, want 0", n)
	}
}

// TestClose: Close ends every lease Lost (ErrClosed), releases them in
// batches of BatchSize, and leaves no goroutine and no timer behind.
func TestClose(t *testing.T) {
	h := newHarness(t, 3, keeper.Options{})
	var leases []*baton.Lease
	for i := range 7 {
		leases = append(leases, h.hold(fmt.Sprintf("k%d", i), 0))
	}
	h.stepTo(time.Second)
	if err := h.k.Close(); err != nil {
		t.Fatalf("Close() = %v", err)
	}
	for _, l := range leases {
		wantLost(t, l, baton.ErrClosed)
	}
	_, releases := h.st.calls()
	var keys []string
	for i, c := range releases {
		if len(c.keys) != []int{3, 3, 1}[min(i, 2)] {
			t.Errorf("Release call %d took %d refs, want batches of 3, 3, 1", i, len(c.keys))
		}
		keys = append(keys, c.keys...)
	}
	slices.Sort(keys)
	if want := []string{"k0", "k1", "k2", "k3", "k4", "k5", "k6"}; !slices.Equal(keys, want) {
		t.Errorf("Close released %v, want each of %v once", keys, want)
	}
	if s := h.k.Stats(); s.Held != 0 || s.Releases != 3 || s.Lost != 0 {
		t.Errorf("Stats() = %+v, want 0 held, 3 releases, no loss counted", s)
	}
	if n := h.clk.Timers(); n != 0 {
		t.Errorf("%d timers active after Close, want 0", n)
	}
	goleak.VerifyNone(t)
}

// TestCloseInFlight: Close cancels a Renew in flight, and bounds each
// release batch by TTL/3 on the keeper's clock when the store hangs.
func TestCloseInFlight(t *testing.T) {
	h := newHarness(t, 10, keeper.Options{})
	l := h.hold("a", 0)
	h.st.set(func(s *fakeStore) { s.holdRenew = true })
	h.idle = 1
	h.stepTo(time.Second)
	h.nextHeld() // never answered: Close must cancel it
	h.st.set(func(s *fakeStore) { s.holdRelease = true })
	done := make(chan error, 1)
	go func() { done <- h.k.Close() }()
	h.nextHeld() // Close's release of a, never answered
	h.settle()   // Close's bound on it is the only timer
	h.clk.Advance(ttl/3 - 1)
	select {
	case err := <-done:
		t.Fatalf("Close() = %v before its release batch's bound", err)
	default:
	}
	h.clk.Advance(1)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Close() = %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return once its release batch's bound passed")
	}
	wantLost(t, l, baton.ErrClosed)
	if n := h.clk.Timers(); n != 0 {
		t.Errorf("%d timers active after Close, want 0", n)
	}
	goleak.VerifyNone(t)
}

// TestReleasesYieldToRound: queued releases go one batch after another,
// and a round that comes due goes out on time even while a release batch
// is unanswered; the releases queued behind it go after the round. A slow
// store cannot make a release cost the held leases their renewal: waiting
// for the release's answer once held a round up past a lease's deadline.
func TestReleasesYieldToRound(t *testing.T) {
	h := newHarness(t, 1, keeper.Options{})
	h.hold("a", 0)
	h.st.set(func(s *fakeStore) { s.holdRelease = true })
	t.Cleanup(func() { h.st.set(func(s *fakeStore) { s.holdRelease = false }) }) // before Close's releases
	h.k.Abandon(keeper.Ref{Key: "w", Owner: "o"})
	w := h.nextHeld()
	for _, key := range []string{"x", "y"} { // queued behind w
		h.k.Abandon(keeper.Ref{Key: key, Owner: "o"})
	}
	h.idle = 1 // the renewer waits for the store, not on its timer
	h.stepTo(100 * time.Millisecond)
	w.answer(nil, nil)
	x := h.nextHeld()     // x and y were due together: x goes first
	h.stepTo(time.Second) // the round is due while x is unanswered
	y := h.nextHeld()     // sent after the round
	h.st.set(func(s *fakeStore) { s.holdRelease = false })
	x.answer(nil, nil)
	y.answer(nil, nil)
	h.waitFor("three releases answered", func() bool { return h.k.Stats().Releases == 3 })
	want := []string{"release w", "release x", "renew a", "release y"}
	if got := h.st.calledInOrder(); !slices.Equal(got, want) {
		t.Errorf("store calls %q, want %q", got, want)
	}
	renews, releases := h.st.calls()
	wantCalls(t, "Renew", renews, []call{{epoch.Add(time.Second), []string{"a"}}})
	wantCalls(t, "Release", releases, []call{
		{epoch, []string{"w"}}, {epoch.Add(100 * time.Millisecond), []string{"x"}}, {epoch.Add(time.Second), []string{"y"}},
	})
}

// TestReleasesNotStarved: after a round that ended past the next round's
// time (it waited for an unanswered batch), one batch of queued releases
// still goes before the retry, so failing rounds cannot hold the queue.
func TestReleasesNotStarved(t *testing.T) {
	h := newHarness(t, 10, keeper.Options{})
	h.hold("a", 0)
	h.st.set(func(s *fakeStore) { s.holdRenew = true })
	h.idle = 1
	h.stepTo(time.Second)
	h.nextHeld() // never answered: its context ends at a's deadline
	h.st.set(func(s *fakeStore) { s.holdRenew, s.renewErr = false, errDown })
	h.k.Abandon(keeper.Ref{Key: "x", Owner: "o"}) // queued while the renewer waits
	h.stepTo(2500*time.Millisecond - 1)
	h.idle = 2
	h.stepTo(2500 * time.Millisecond) // the wait ends; the retry is overdue
	want := []string{"renew a", "release x", "renew a"}
	if got := h.st.calledInOrder(); !slices.Equal(got, want) {
		t.Errorf("store calls %q, want %q", got, want)
	}
	_, releases := h.st.calls()
	wantCalls(t, "Release", releases, []call{{epoch.Add(2500 * time.Millisecond), []string{"x"}}})
}
