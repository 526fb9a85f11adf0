package baton_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/batonslog"
	"github.com/baton-go/baton/engine"
	"github.com/baton-go/baton/memlock"
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
	g := engine.Grant{Name: "orders/42", Engine: "mem", Token: 7, Owner: "o1", Observer: rec,
		Recipe: "mutex", Session: "s1", Acquire: engine.NextAcquireID(),
		Release: func(context.Context) error {
			releases++
			if releases == 1 {
				return errors.New("connection reset")
			}
			return nil
		}}
	l, ctl := engine.NewLease(context.Background(), g)
	ctl.Suspend()
	ctl.Suspend() // no change, no event
	ctl.Resume()
	if err := l.Release(context.Background()); err == nil {
		t.Fatal("first Release = nil, want the store's error")
	}
	if err := l.Release(context.Background()); !errors.Is(err, baton.ErrLost) {
		t.Fatalf("second Release = %v, want the loss the failed one ended the lease with", err)
	}
	want := []baton.EventKind{baton.EventSuspended, baton.EventResumed, baton.EventReleaseFailed, baton.EventLost}
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
	_, ctl := engine.NewLease(context.Background(), engine.Grant{Name: "n", Observer: rec})
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
		_, ctl := engine.NewLease(context.Background(), engine.Grant{Name: "n", Observer: rec})
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

// secretName is a lock name that must not leave HashNames in any form.
const secretName = "tenant-4711/invoice-99"

// leaks returns the events (and their slog records) that still contain
// secretName or one of its segments.
func leaks(t *testing.T, events []baton.Event) []string {
	t.Helper()
	var buf bytes.Buffer
	log := batonslog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}), batonslog.Options{})
	var out []string
	for _, e := range events {
		buf.Reset()
		log.Observe(context.Background(), e)
		text := fmt.Sprintf("%+v %v %s", e, e.Err, buf.String())
		for _, s := range []string{"tenant-4711", "invoice-99"} {
			if strings.Contains(text, s) {
				out = append(out, text)
				break
			}
		}
	}
	return out
}

// TestHashNamesMemlock: a real engine's events (grant, loss with its
// cause, release), whose owners are built from the lock's path, carry
// the name in no field and in no slog record once hashed.
func TestHashNamesMemlock(t *testing.T) {
	rec := &recorder{}
	srv := memlock.NewServer(memlock.Options{Observer: baton.HashNames([]byte("k"), rec)})
	t.Cleanup(srv.Close)
	a := srv.Client("a")
	m, err := a.Mutex(secretName)
	if err != nil {
		t.Fatal(err)
	}
	l, err := m.Lock(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(l.Owner(), "tenant-4711") {
		t.Fatalf("memlock owner %q does not carry the name: the test would prove nothing", l.Owner())
	}
	ma, _ := baton.As[*memlock.Client](a)
	ma.Expire()
	<-l.Done()
	rec.mu.Lock()
	events := slices.Clone(rec.events)
	rec.mu.Unlock()
	var lost *baton.Event
	for i := range events {
		if events[i].Kind == baton.EventLost {
			lost = &events[i]
		}
	}
	if lost == nil || lost.Owner == "" || lost.Err == nil {
		t.Fatalf("events %v: want a Lost with an owner and a cause", rec.kinds())
	}
	if !errors.Is(lost.Err, baton.ErrLost) {
		t.Errorf("hashed Lost Err = %v, no longer wraps ErrLost", lost.Err)
	}
	if l := leaks(t, events); len(l) > 0 {
		t.Errorf("hashed events still carry the name:\n%s", strings.Join(l, "\n"))
	}
}

// TestHashNamesEngineShapes: events shaped as ZooKeeper, etcd and the
// fences build them (owners holding the lock path, a cause quoting the
// entry, a stale rejection's stored owner) lose the name everywhere, and
// a stale rejection's hashed owners still match the grants' hashed owners.
func TestHashNamesEngineShapes(t *testing.T) {
	zkOwner := "/baton/" + secretName + "/_c_2b7e1f-lock-0000000007"
	etcdOwner := "baton/" + secretName + "/694d8a1c2e3f@61"
	events := []baton.Event{
		{Kind: baton.EventGranted, Engine: "zk", Name: secretName, Token: 7, Owner: zkOwner, Session: "0x1000a2b3c4d0001"},
		{Kind: baton.EventLost, Engine: "zk", Name: secretName, Token: 7, Owner: zkOwner, Session: "0x1000a2b3c4d0001",
			Err: fmt.Errorf("%w: zk: node %s deleted", baton.ErrLost, zkOwner)},
		{Kind: baton.EventRecovered, Engine: "zk", Name: secretName, Owner: zkOwner, Session: "0x1000a2b3c4d0001"},
		{Kind: baton.EventGranted, Engine: "mem", Name: secretName, Owner: secretName + "/lock-0000000001", Session: "worker-" + secretName + "#1"},
		{Kind: baton.EventGranted, Engine: "etcd", Name: secretName, Token: 61, Owner: etcdOwner, Session: "694d8a1c2e3f"},
		{Kind: baton.EventStaleRejected, Engine: "fence", Name: secretName, Resource: "orders/" + secretName,
			Token: 7, Owner: zkOwner, StoredToken: 61, StoredOwner: etcdOwner,
			Err: fmt.Errorf("fence: stale write to %q by %q: %w", "orders/"+secretName, zkOwner, baton.ErrStaleToken)},
		{Kind: baton.EventTask, Engine: "tasks", Resource: secretName, Owner: "worker-" + secretName, Outcome: "stale"},
	}
	rec := &recorder{}
	o := baton.HashNames([]byte("k"), rec)
	for _, e := range events {
		o.Observe(context.Background(), e)
	}
	if l := leaks(t, rec.events); len(l) > 0 {
		t.Errorf("hashed events still carry the name:\n%s", strings.Join(l, "\n"))
	}
	got := rec.events
	if got[0].Owner != got[5].Owner || got[4].Owner != got[5].StoredOwner || got[0].Owner == zkOwner {
		t.Errorf("stale rejection owners %q/%q do not match the grants' %q/%q", got[5].Owner, got[5].StoredOwner, got[0].Owner, got[4].Owner)
	}
	if got[0].Session != "0x1000a2b3c4d0001" {
		t.Errorf("session without a name changed to %q", got[0].Session)
	}
	if !errors.Is(got[1].Err, baton.ErrLost) || !errors.Is(got[5].Err, baton.ErrStaleToken) {
		t.Errorf("hashed errors %v, %v no longer wrap their sentinels", got[1].Err, got[5].Err)
	}
}
