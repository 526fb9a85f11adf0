package baton_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/engine"
)

func newLease(t *testing.T, parent context.Context, key any, release func(context.Context) error) (*baton.Lease, engine.Control) {
	t.Helper()
	return engine.NewLease(parent, engine.Grant{Name: "orders/42", Engine: "test", Token: 7, Owner: "o-1", Key: key, Release: release})
}

func TestLeaseReleaseLifecycle(t *testing.T) {
	calls := 0
	l, _ := newLease(t, context.Background(), nil, func(context.Context) error { calls++; return nil })
	if st := l.State(); st != baton.Held {
		t.Fatalf("State() = %v, want %v", st, baton.Held)
	}
	_, changed := l.Observe()
	if err := l.Release(context.Background()); err != nil {
		t.Fatalf("Release() = %v, want nil", err)
	}
	select {
	case <-changed:
	default:
		t.Fatal("Observe channel not closed by Release")
	}
	if calls != 1 {
		t.Errorf("engine release called %d times, want 1", calls)
	}
	if st := l.State(); st != baton.Released {
		t.Errorf("State() after Release = %v, want %v", st, baton.Released)
	}
	if cause := context.Cause(l.Context()); cause != baton.ErrReleased {
		t.Errorf("Cause(Context()) = %v, want %v", cause, baton.ErrReleased)
	}
	if err := l.Release(context.Background()); !errors.Is(err, baton.ErrNotHeld) {
		t.Errorf("second Release() = %v, want ErrNotHeld", err)
	}
	if calls != 1 {
		t.Errorf("engine release called %d times after over-release, want 1", calls)
	}
}

// TestLeaseReleaseFailureEnds: a failed release ends the lease Lost at
// once, its cause wrapping ErrLost and the engine's error, and the engine
// is not asked again: it removes the entry in the background. Left held,
// a lease whose release timed out was renewed until its process ended.
func TestLeaseReleaseFailureEnds(t *testing.T) {
	reset := errors.New("connection reset")
	calls := 0
	l, _ := newLease(t, context.Background(), nil, func(context.Context) error { calls++; return reset })
	if err := l.Release(context.Background()); !errors.Is(err, reset) {
		t.Fatalf("Release() with a failing engine = %v, want the engine's error", err)
	}
	if st, h := l.State(), l.Holds(); st != baton.Lost || h != 0 {
		t.Fatalf("after a failed release: State() = %v, Holds() = %d, want lost with no hold", st, h)
	}
	for _, err := range []error{context.Cause(l.Context()), l.Err()} {
		if !errors.Is(err, baton.ErrLost) || !errors.Is(err, reset) {
			t.Errorf("lease ended with %v, want an error wrapping %v and %v", err, baton.ErrLost, reset)
		}
	}
	if err := l.Release(context.Background()); !errors.Is(err, baton.ErrLost) {
		t.Errorf("second Release() = %v, want the loss", err)
	}
	if calls != 1 {
		t.Errorf("engine release called %d times, want 1", calls)
	}
}

func TestLeaseLost(t *testing.T) {
	l, ctl := newLease(t, context.Background(), nil, func(context.Context) error {
		t.Error("engine release called on a lost lease")
		return nil
	})
	ctl.Suspend()
	st, changed := l.Observe()
	if st != baton.Suspended {
		t.Fatalf("State() after Suspend = %v, want %v", st, baton.Suspended)
	}
	ctl.Resume()
	select {
	case <-changed:
	default:
		t.Fatal("Observe channel not closed by Resume")
	}
	if st := l.State(); st != baton.Held {
		t.Fatalf("State() after Resume = %v, want %v", st, baton.Held)
	}
	if !ctl.Lose(errors.New("session expired")) {
		t.Fatal("Lose() = false on a live lease")
	}
	if ctl.Lose(nil) {
		t.Error("second Lose() = true, want false")
	}
	ctl.Resume() // no resurrection
	if st := l.State(); st != baton.Lost {
		t.Fatalf("State() = %v, want %v", st, baton.Lost)
	}
	select {
	case <-l.Done():
	case <-time.After(time.Second):
		t.Fatal("Done() not closed on loss")
	}
	if cause := context.Cause(l.Context()); !errors.Is(cause, baton.ErrLost) || !strings.Contains(cause.Error(), "session expired") {
		t.Errorf("Cause(Context()) = %v, want ErrLost with the engine's reason", cause)
	}
	if err := l.Release(context.Background()); !errors.Is(err, baton.ErrLost) {
		t.Errorf("Release() of a lost lease = %v, want ErrLost", err)
	}
}

func TestReenter(t *testing.T) {
	type lockID struct{ n int }
	key, other := &lockID{1}, &lockID{2}
	l, ctl := newLease(t, context.Background(), key, func(context.Context) error { return nil })
	if got, err := engine.Reenter(context.Background(), key); got != nil || err != nil {
		t.Fatalf("Reenter(no lease) = %v, %v, want nil, nil", got, err)
	}
	if got, err := engine.Reenter(l.Context(), other); got != nil || err != nil {
		t.Fatalf("Reenter(other lock) = %v, %v, want nil, nil", got, err)
	}
	// A lease of another lock nested inside still finds the outer one.
	inner, _ := newLease(t, l.Context(), other, func(context.Context) error { return nil })
	got, err := engine.Reenter(inner.Context(), key)
	if got != l || err != nil {
		t.Fatalf("Reenter(nested ctx) = %v, %v, want the outer lease", got, err)
	}
	if h := l.Holds(); h != 2 {
		t.Fatalf("Holds() = %d, want 2", h)
	}
	if err := l.Release(context.Background()); err != nil || l.State() != baton.Held {
		t.Fatalf("first Release() = %v with state %v, want nil and still held", err, l.State())
	}
	ctl.Lose(nil)
	if got, err := engine.Reenter(l.Context(), key); got != nil || !errors.Is(err, baton.ErrLost) {
		t.Errorf("Reenter(lost lease) = %v, %v, want ErrLost", got, err)
	}
}

func TestLeaseContextKeepsValuesNotCancel(t *testing.T) {
	type k struct{}
	parent, cancel := context.WithCancel(context.WithValue(context.Background(), k{}, "v"))
	l, _ := newLease(t, parent, nil, nil)
	cancel()
	if l.Context().Err() != nil {
		t.Error("lease context cancelled with the acquire context; holding must outlive the wait's context")
	}
	if v := l.Context().Value(k{}); v != "v" {
		t.Errorf("lease context value = %v, want the acquire context's", v)
	}
}
