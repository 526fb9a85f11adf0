package redisfence_test

import (
	"errors"
	"testing"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/internal/recorder"
)

// TestObserver checks that an accepted write reports nothing and a stale
// Set and HSet each report one EventStaleRejected with both writes.
func TestObserver(t *testing.T) {
	ctx := t.Context()
	f, _ := newFence(t)
	rec := recorder.New()
	f.Observer = rec
	if err := f.Set(ctx, "order-42", 7, "B", "b", nil); err != nil {
		t.Fatalf("Set(7, B) = %v", err)
	}
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
