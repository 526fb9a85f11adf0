package baton_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/baton-go/baton"
)

// recorder is an Observer keeping every event.
type recorder struct {
	mu     sync.Mutex
	events []baton.Event
}

func (r *recorder) Observe(_ context.Context, e baton.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

func (r *recorder) kinds() []baton.EventKind {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]baton.EventKind, len(r.events))
	for i, e := range r.events {
		out[i] = e.Kind
	}
	return out
}

func TestLeaseEmitsStateChanges(t *testing.T) {
	rec := &recorder{}
	releases := 0
	g := baton.Grant{Name: "orders/42", Engine: "mem", Token: 7, Owner: "o1", Observer: rec,
		Recipe: "mutex", Session: "s1", Acquire: baton.NextAcquireID(),
		Release: func(context.Context) error {
			releases++
			if releases == 1 {
				return errors.New("connection reset")
			}
			return nil
		}}
	l, ctl := baton.NewLease(context.Background(), g)
	ctl.Suspend()
	ctl.Suspend() // no change, no event
	ctl.Resume()
	if err := l.Release(context.Background()); err == nil {
		t.Fatal("first Release = nil, want the store's error")
	}
	if err := l.Release(context.Background()); err != nil {
		t.Fatalf("second Release = %v", err)
	}
	want := []baton.EventKind{baton.EventSuspended, baton.EventResumed, baton.EventReleaseFailed, baton.EventReleased}
	got := rec.kinds()
	if len(got) != len(want) {
		t.Fatalf("events = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("events = %v, want %v", got, want)
		}
	}
	for _, e := range rec.events {
		if e.Name != "orders/42" || e.Token != 7 || e.Owner != "o1" || e.Session != "s1" || e.Recipe != "mutex" || e.Acquire != g.Acquire || e.Engine != "mem" {
			t.Errorf("%v event = %+v, want the grant's name, token, owner, session, recipe, acquire and engine", e.Kind, e)
		}
	}
}

func TestLeaseEmitsLostWithCause(t *testing.T) {
	rec := &recorder{}
	_, ctl := baton.NewLease(context.Background(), baton.Grant{Name: "n", Observer: rec})
	cause := errors.New("session expired")
	ctl.Lose(cause)
	ctl.Lose(cause) // already ended: no second event
	if got := rec.kinds(); len(got) != 1 || got[0] != baton.EventLost {
		t.Fatalf("events = %v, want [lost]", got)
	}
	if err := rec.events[0].Err; !errors.Is(err, baton.ErrLost) || !errors.Is(err, cause) {
		t.Errorf("Lost event Err = %v, want it to wrap ErrLost and the cause", err)
	}
}

// TestLeaseLostLead: LoseAhead's lead is the Lost event's Lead (a
// negative one, a loss declared after the server could have expired the
// grant, is 0); Lose reports none, and a Lead of an ended lease is not
// reported at all.
func TestLeaseLostLead(t *testing.T) {
	for _, c := range []struct {
		lead, want time.Duration
	}{{150 * time.Millisecond, 150 * time.Millisecond}, {-time.Second, 0}, {0, 0}} {
		rec := &recorder{}
		_, ctl := baton.NewLease(context.Background(), baton.Grant{Name: "n", Observer: rec})
		if !ctl.LoseAhead(errors.New("deadline"), c.lead) {
			t.Fatalf("LoseAhead(%v) = false on a held lease", c.lead)
		}
		if ctl.LoseAhead(errors.New("again"), time.Hour) || ctl.Lose(nil) {
			t.Errorf("LoseAhead or Lose on a lost lease = true, want false")
		}
		if len(rec.events) != 1 || rec.events[0].Kind != baton.EventLost || rec.events[0].Lead != c.want || !errors.Is(rec.events[0].Err, baton.ErrLost) {
			t.Errorf("LoseAhead(%v): events %+v, want one Lost with Lead %v wrapping ErrLost", c.lead, rec.events, c.want)
		}
	}
}

func TestHashNames(t *testing.T) {
	rec := &recorder{}
	o := baton.HashNames([]byte("k1"), rec)
	o.Observe(context.Background(), baton.Event{Kind: baton.EventGranted, Name: "tenant-7/payment-42"})
	o.Observe(context.Background(), baton.Event{Kind: baton.EventGranted, Name: "tenant-7/payment-42"})
	baton.HashNames([]byte("k2"), rec).Observe(context.Background(), baton.Event{Name: "tenant-7/payment-42"})
	a, b, c := rec.events[0].Name, rec.events[1].Name, rec.events[2].Name
	if strings.Contains(a, "tenant") || !strings.HasPrefix(a, "h:") || len(a) != 18 {
		t.Errorf("hashed name = %q, want h: and 16 hex digits", a)
	}
	if a != b {
		t.Errorf("same name, same key hashed to %q and %q", a, b)
	}
	if a == c {
		t.Errorf("different keys gave the same pseudonym %q", a)
	}
	if baton.HashNames([]byte("k"), nil) != nil {
		t.Error("HashNames(key, nil) != nil: a nil observer must stay free")
	}
}

func TestEventKindString(t *testing.T) {
	if got := baton.EventStaleRejected.String(); got != "stale_rejected" {
		t.Errorf("EventStaleRejected.String() = %q", got)
	}
	if got := baton.EventKind(200).String(); got != "EventKind(200)" {
		t.Errorf("EventKind(200).String() = %q", got)
	}
}
