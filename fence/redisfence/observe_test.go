package redisfence_test

import (
	"errors"
	"testing"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/fence"
	"github.com/baton-go/baton/fence/redisfence"
	"github.com/baton-go/baton/internal/recorder"
	"github.com/baton-go/baton/memlock"
)

// TestObserver checks that an accepted write reports nothing and a stale
// Set and HSet each report one EventStaleRejected with both writes.
func TestObserver(t *testing.T) {
	ctx := t.Context()
	f, rec := observedAt7(t)
	if got := rec.Events(); len(got) != 0 {
		t.Fatalf("accepted Set reported %v, want nothing", recorder.Kinds(got))
	}
	if err := f.Set(ctx, "order-42", 6, "A", "a", nil); !errors.Is(err, baton.ErrStaleToken) {
		t.Fatalf("Set(6, A) = %v, want %v", err, baton.ErrStaleToken)
	}
	if err := f.HSet(ctx, "order-42", 7, "C", "field", "c"); !errors.Is(err, baton.ErrStaleToken) {
		t.Fatalf("HSet(7, C) = %v, want %v", err, baton.ErrStaleToken)
	}
	want := []baton.Event{
		{Kind: baton.EventStaleRejected, Engine: "fence", Resource: "order-42", Token: 6, Owner: "A", StoredToken: 7, StoredOwner: "B"},
		{Kind: baton.EventStaleRejected, Engine: "fence", Resource: "order-42", Token: 7, Owner: "C", StoredToken: 7, StoredOwner: "B"},
	}
	got := rec.Events()
	if len(got) != len(want) {
		t.Fatalf("events = %v, want two %v", recorder.Kinds(got), baton.EventStaleRejected)
	}
	for i := range want {
		g := got[i]
		if g.Time.IsZero() {
			t.Errorf("event %d has no Time", i)
		}
		g.Time = want[i].Time
		if g != want[i] {
			t.Errorf("event %d = %+v, want %+v", i, g, want[i])
		}
	}
}

// TestLostLeaseAndLockName: a Set made with the context of a lease this
// process knows is lost fails with an error wrapping baton.ErrLost, not a
// stale one, and reports nothing; a refused Set whose context names its
// lock (fence.WithLockName) carries the name in its error and its event.
func TestLostLeaseAndLockName(t *testing.T) {
	ctx := t.Context()
	f, rec := observedAt7(t)
	srv := memlock.NewServer(memlock.Options{})
	t.Cleanup(srv.Close)
	c := srv.Client("zombie")
	m, _ := c.Mutex("orders/42")
	l, err := m.Lock(ctx)
	if err != nil {
		t.Fatalf("Lock = %v", err)
	}
	mc, _ := baton.As[*memlock.Client](c)
	mc.Expire()
	<-l.Done()
	err = f.Set(l.Context(), "order-42", l.Token(), l.Owner(), "z", nil)
	if !errors.Is(err, baton.ErrLost) || errors.Is(err, baton.ErrStaleToken) {
		t.Errorf("Set with a lost lease's context = %v, want %v and not %v", err, baton.ErrLost, baton.ErrStaleToken)
	}
	if got := rec.Events(); len(got) != 0 {
		t.Errorf("Set cut short by the lost lease reported %v", recorder.Kinds(got))
	}

	err = f.Set(fence.WithLockName(ctx, "orders/42"), "order-42", 6, "A", "a", nil)
	var se *fence.StaleError
	if !errors.As(err, &se) || se.Name != "orders/42" {
		t.Fatalf("Set(6, A) = %v, want a *StaleError naming lock orders/42", err)
	}
	if got := rec.Events(); len(got) != 1 || got[0].Name != "orders/42" || got[0].Token != 6 || got[0].StoredToken != 7 {
		t.Errorf("events = %+v, want one stale rejection of lock orders/42, token 6 after 7", got)
	}
}

// observedAt7 is a fence reporting to a recorder, whose "order-42" holds
// an accepted write of token 7 by B.
func observedAt7(t *testing.T) (redisfence.Fence, *recorder.Recorder) {
	t.Helper()
	f, _ := newFence(t)
	rec := recorder.New()
	f.Observer = rec
	if err := f.Set(t.Context(), "order-42", 7, "B", "b", nil); err != nil {
		t.Fatalf("Set(7, B) = %v", err)
	}
	return f, rec
}
