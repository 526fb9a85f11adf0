package zklock_test

import (
	"context"
	"database/sql"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/internal/leasetest"
	"github.com/baton-go/baton/internal/recorder"
	"github.com/baton-go/baton/zklock"
)

// TestObserverPausedHolder is the paused-holder story on a real server:
// holder a is cut off from ZooKeeper (a blackhole at the transport) while
// b waits. a's lease must report Suspended then Lost, and only then may b
// report its grant, with a larger token; a's late write with its old
// token must be the one stale rejection at the fenced SQLite table.
func TestObserverPausedHolder(t *testing.T) {
	const timeout = time.Second
	rec := recorder.New()
	p := proxy(t)
	a := dial(t, p.Addr, zklock.Options{SessionTimeout: timeout, Observer: rec})
	b := dial(t, "", zklock.Options{SessionTimeout: timeout, Observer: rec})
	name := lockName(t)
	tbl, db := leasetest.FencedTable(t, rec)

	la := lock(t, mutex(t, a, name))
	sessA := "0x" + strconv.FormatInt(a.SessionID(), 16)
	sessB := "0x" + strconv.FormatInt(b.SessionID(), 16)
	type result struct {
		l   *baton.Lease
		err error
	}
	got := make(chan result, 1)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	mb := mutex(t, b, name)
	go func() {
		l, err := mb.Lock(ctx)
		got <- result{l, err}
	}()
	waitFor(t, rec, func(e baton.Event) bool { return e.Kind == baton.EventAcquireRetry })
	if err := p.Blackhole(""); err != nil {
		t.Fatalf("Blackhole = %v", err)
	}
	r := <-got
	if r.err != nil {
		t.Fatalf("b: Lock(%q) = %v", name, r.err)
	}
	lb := r.l
	if lb.Token() <= la.Token() {
		t.Fatalf("b's token %d, want more than a's %d", lb.Token(), la.Token())
	}
	write := func(ctx context.Context, l *baton.Lease) error {
		return tbl.Write(ctx, db, name, l.Token(), l.Owner(), func(*sql.Tx) error { return nil })
	}
	if err := write(lb.Context(), lb); err != nil {
		t.Fatalf("b's fenced write = %v", err)
	}
	if err := write(context.WithoutCancel(la.Context()), la); !errors.Is(err, baton.ErrStaleToken) {
		t.Fatalf("a's late fenced write = %v, want %v", err, baton.ErrStaleToken)
	}
	release(t, lb)

	ida := waitFor(t, rec, func(e baton.Event) bool { return e.Kind == baton.EventGranted && e.Owner == la.Owner() }).Acquire
	idb := waitFor(t, rec, func(e baton.Event) bool { return e.Kind == baton.EventGranted && e.Owner == lb.Owner() }).Acquire
	lease := func(k baton.EventKind, id uint64, l *baton.Lease, session string) baton.Event {
		return baton.Event{Kind: k, Engine: "zk", Name: name, Recipe: "mutex", Acquire: id,
			Token: l.Token(), Owner: l.Owner(), Session: session}
	}
	start := func(id uint64) baton.Event {
		return baton.Event{Kind: baton.EventAcquireStarted, Engine: "zk", Name: name, Recipe: "mutex", Acquire: id}
	}
	grantA := lease(baton.EventGranted, ida, la, sessA)
	grantA.Depth = 1
	expect(t, "holder a", rec.Acquire(ida), []baton.Event{
		start(ida),
		grantA,
		lease(baton.EventSuspended, ida, la, sessA),
		lease(baton.EventLost, ida, la, sessA),
	})
	retry := start(idb)
	retry.Kind, retry.Attempt, retry.Position = baton.EventAcquireRetry, 1, 1
	grantB := lease(baton.EventGranted, idb, lb, sessB)
	grantB.Depth = 1
	expect(t, "next holder b", rec.Acquire(idb), []baton.Event{
		start(idb),
		retry,
		grantB,
		lease(baton.EventReleased, idb, lb, sessB),
	})
	expect(t, "fence", rec.Of(func(e baton.Event) bool { return e.Engine == "fence" }), []baton.Event{{
		Kind: baton.EventStaleRejected, Engine: "fence", Name: name, Resource: name,
		Token: la.Token(), Owner: la.Owner(), StoredToken: lb.Token(), StoredOwner: lb.Owner(),
	}})

	all := rec.Events()
	lost, next := -1, -1
	for i, e := range all {
		switch {
		case e.Kind == baton.EventLost && e.Acquire == ida:
			lost = i
		case e.Kind == baton.EventGranted && e.Acquire == idb:
			next = i
		}
	}
	if lost > next {
		t.Errorf("b's grant (event %d) reported before a's loss (event %d)", next, lost)
	}
	if w := rec.Acquire(idb)[2].Wait; w <= 0 {
		t.Errorf("b's grant: Wait = %v, want > 0", w)
	}
	if err := rec.Acquire(ida)[3].Err; !errors.Is(err, baton.ErrLost) {
		t.Errorf("a's loss: Err = %v, want %v", err, baton.ErrLost)
	}
}

// expect checks that got is want, in order, ignoring the fields timed on
// the real clock (Time, which must be set, Wait, Hold, Duration) and Err.
func expect(t *testing.T, what string, got, want []baton.Event) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: events %v, want %d events", what, recorder.Kinds(got), len(want))
	}
	for i, g := range got {
		if g.Time.IsZero() {
			t.Errorf("%s: event %d (%v) has no Time", what, i, g.Kind)
		}
		g.Time, g.Wait, g.Hold, g.Duration, g.Err = time.Time{}, 0, 0, 0, nil
		if g != want[i] {
			t.Errorf("%s: event %d = %+v, want %+v", what, i, g, want[i])
		}
	}
}

// waitFor returns the first event matching match, waiting for it.
func waitFor(t *testing.T, rec *recorder.Recorder, match func(baton.Event) bool) baton.Event {
	t.Helper()
	e, ok := rec.WaitFor(10*time.Second, match)
	if !ok {
		t.Fatalf("event not reported; events: %v", recorder.Kinds(rec.Events()))
	}
	return e
}
