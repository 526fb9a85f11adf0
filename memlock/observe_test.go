package memlock_test

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/fence"
	"github.com/baton-go/baton/internal/leasetest"
	"github.com/baton-go/baton/internal/recorder"
	"github.com/baton-go/baton/memlock"
)

// want is one expected event: its fields apart from the real-time ones
// (Time, and Hold and Duration of lease events), and err, the target its
// Err must match with errors.Is (nil: Err must be nil).
type want struct {
	e   baton.Event
	err error
}

// expect checks that got is exactly want, in order.
func expect(t *testing.T, what string, got []baton.Event, want []want) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: events %v, want %d events", what, recorder.Kinds(got), len(want))
	}
	for i, w := range want {
		g := got[i]
		if g.Time.IsZero() {
			t.Errorf("%s: event %d (%v) has no Time", what, i, g.Kind)
		}
		gerr := g.Err
		g.Time, g.Hold, g.Duration, g.Err = time.Time{}, 0, 0, nil
		if g != w.e {
			t.Errorf("%s: event %d = %+v, want %+v", what, i, g, w.e)
		}
		switch {
		case w.err == nil && gerr != nil:
			t.Errorf("%s: event %d (%v).Err = %v, want nil", what, i, g.Kind, gerr)
		case w.err != nil && !errors.Is(gerr, w.err):
			t.Errorf("%s: event %d (%v).Err = %v, want %v", what, i, g.Kind, gerr, w.err)
		}
	}
}

// granted returns the ID of the acquire that granted l, from its
// EventGranted.
func granted(t *testing.T, rec *recorder.Recorder, l *baton.Lease) uint64 {
	t.Helper()
	e, ok := rec.WaitFor(hang, func(e baton.Event) bool {
		return e.Kind == baton.EventGranted && e.Owner == l.Owner() && !e.Reentered
	})
	if !ok {
		t.Fatalf("no %v event for the lease of %s", baton.EventGranted, l.Owner())
	}
	return e.Acquire
}

// waitEvent waits for the first event of kind matching match.
func waitEvent(t *testing.T, rec *recorder.Recorder, kind baton.EventKind, match func(baton.Event) bool) baton.Event {
	t.Helper()
	e, ok := rec.WaitFor(hang, func(e baton.Event) bool { return e.Kind == kind && match(e) })
	if !ok {
		t.Fatalf("no %v event within %v; events: %v", kind, hang, recorder.Kinds(rec.Events()))
	}
	return e
}

// TestObserverWaiter is an acquire with one waiter: the waiter reports its
// start, one wait with one entry ahead, and its grant after exactly the
// virtual time the holder held the lock; the holder's lease reports its
// release in between.
func TestObserverWaiter(t *testing.T) {
	rec := recorder.New()
	srv, fake := newServer(t, memlock.Options{Observer: rec})
	a, b := srv.Client("a"), srv.Client("b")
	const name = "orders/42"
	la := lock(t, a, name)
	ch, _ := lockAsync(t, b, name, nil)
	retry := waitEvent(t, rec, baton.EventAcquireRetry, func(baton.Event) bool { return true })
	fake.Advance(3 * time.Second)
	release(t, la)
	lb := await(t, ch).l
	if lb == nil {
		t.Fatal("b's Lock failed")
	}
	release(t, lb)

	ida, idb := granted(t, rec, la), granted(t, rec, lb)
	if retry.Acquire != idb {
		t.Fatalf("the retry belongs to acquire %d, want b's %d", retry.Acquire, idb)
	}
	mem := baton.Event{Engine: "mem", Name: name, Recipe: "mutex"}
	ev := func(k baton.EventKind, id uint64, f func(*baton.Event)) baton.Event {
		e := mem
		e.Kind, e.Acquire = k, id
		if f != nil {
			f(&e)
		}
		return e
	}
	grantA := func(e *baton.Event) { e.Token, e.Owner, e.Session = 1, la.Owner(), "a#1" }
	grantB := func(e *baton.Event) { e.Token, e.Owner, e.Session = 3, lb.Owner(), "b#1" }
	expect(t, "a", rec.Acquire(ida), []want{
		{e: ev(baton.EventAcquireStarted, ida, nil)},
		{e: ev(baton.EventGranted, ida, func(e *baton.Event) { grantA(e); e.Depth = 1 })},
		{e: ev(baton.EventReleased, ida, grantA)},
	})
	expect(t, "b", rec.Acquire(idb), []want{
		{e: ev(baton.EventAcquireStarted, idb, nil)},
		{e: ev(baton.EventAcquireRetry, idb, func(e *baton.Event) { e.Attempt, e.Position = 1, 1 })},
		{e: ev(baton.EventGranted, idb, func(e *baton.Event) { grantB(e); e.Depth, e.Wait = 1, 3*time.Second })},
		{e: ev(baton.EventReleased, idb, grantB)},
	})
}

// TestObserverReentryAndTryLock checks a reentrant grant (an acquire of its
// own, reporting Reentered and Depth 2 with the holder's token and owner)
// and a TryLock that fails while the lock is held.
func TestObserverReentryAndTryLock(t *testing.T) {
	rec := recorder.New()
	srv, _ := newServer(t, memlock.Options{Observer: rec})
	const name = "orders/7"
	ma, err := srv.Client("a").Mutex(name)
	if err != nil {
		t.Fatal(err)
	}
	mb, err := srv.Client("b").Mutex(name)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	la, err := ma.Lock(ctx)
	if err != nil {
		t.Fatalf("a: Lock = %v", err)
	}
	inner, err := ma.Lock(la.Context())
	if err != nil || inner != la {
		t.Fatalf("a: nested Lock = %v, %v, want the same lease", inner, err)
	}
	if _, err := mb.TryLock(ctx); !errors.Is(err, baton.ErrNotAcquired) {
		t.Fatalf("b: TryLock = %v, want %v", err, baton.ErrNotAcquired)
	}
	release(t, inner)
	release(t, la)

	events := rec.Events()
	if len(events) != 7 {
		t.Fatalf("events %v, want 7", recorder.Kinds(events))
	}
	ida, idn, idb := events[0].Acquire, events[2].Acquire, events[4].Acquire
	if ida == idn || idn == idb || ida == idb {
		t.Fatalf("acquire IDs %d, %d, %d are not distinct", ida, idn, idb)
	}
	base := baton.Event{Engine: "mem", Name: name, Recipe: "mutex"}
	at := func(k baton.EventKind, id uint64) baton.Event { e := base; e.Kind, e.Acquire = k, id; return e }
	grant := func(e baton.Event, depth int, re bool) baton.Event {
		e.Token, e.Owner, e.Depth, e.Reentered = la.Token(), la.Owner(), depth, re
		if !re {
			e.Session = "a#1"
		}
		return e
	}
	rel := at(baton.EventReleased, ida)
	rel.Token, rel.Owner, rel.Session = la.Token(), la.Owner(), "a#1"
	expect(t, "all", events, []want{
		{e: at(baton.EventAcquireStarted, ida)},
		{e: grant(at(baton.EventGranted, ida), 1, false)},
		{e: at(baton.EventAcquireStarted, idn)},
		{e: grant(at(baton.EventGranted, idn), 2, true)},
		{e: at(baton.EventAcquireStarted, idb)},
		{e: at(baton.EventAcquireFailed, idb), err: baton.ErrNotAcquired},
		{e: rel},
	})
}

// TestObserverPausedHolder is the story fencing exists for: holder a is
// cut off (a pause, a partition) while b waits; a's lease is Suspended,
// then Lost when its session expires; only then is b granted, with a
// larger token; b writes, and a's late write with its old token is the
// one stale rejection at the fenced SQLite table.
func TestObserverPausedHolder(t *testing.T) {
	rec := recorder.New()
	srv, fake := newServer(t, memlock.Options{Observer: rec})
	a, b := srv.Client("a"), srv.Client("b")
	const name = "exports/export-88"
	tbl, db := leasetest.FencedTable(t, rec)

	la := lock(t, a, name)
	ch, _ := lockAsync(t, b, name, nil)
	waitEvent(t, rec, baton.EventAcquireRetry, func(baton.Event) bool { return true })
	ctl(a).Partition()
	waitEvent(t, rec, baton.EventSuspended, func(e baton.Event) bool { return e.Owner == la.Owner() })
	fake.Advance(ttl)
	lb := await(t, ch).l
	if lb == nil {
		t.Fatal("b's Lock failed")
	}
	if lb.Token() <= la.Token() {
		t.Fatalf("b's token %d, want more than a's %d", lb.Token(), la.Token())
	}
	if err := fencedWrite(lb.Context(), db, tbl, name, lb); err != nil {
		t.Fatalf("b's fenced write = %v", err)
	}
	// a wakes up and writes, not looking at its lease: the fence refuses.
	late := context.WithoutCancel(la.Context())
	if err := fencedWrite(late, db, tbl, name, la); !errors.Is(err, baton.ErrStaleToken) {
		t.Fatalf("a's late fenced write = %v, want %v", err, baton.ErrStaleToken)
	}
	release(t, lb)

	ida, idb := granted(t, rec, la), granted(t, rec, lb)
	ev := func(k baton.EventKind, id uint64, l *baton.Lease, session string) baton.Event {
		return baton.Event{Kind: k, Engine: "mem", Name: name, Recipe: "mutex", Acquire: id,
			Token: l.Token(), Owner: l.Owner(), Session: session}
	}
	start := func(id uint64) baton.Event {
		return baton.Event{Kind: baton.EventAcquireStarted, Engine: "mem", Name: name, Recipe: "mutex", Acquire: id}
	}
	grantA := ev(baton.EventGranted, ida, la, "a#1")
	grantA.Depth = 1
	expect(t, "holder a", rec.Acquire(ida), []want{
		{e: start(ida)},
		{e: grantA},
		{e: ev(baton.EventSuspended, ida, la, "a#1")},
		{e: ev(baton.EventLost, ida, la, "a#1"), err: baton.ErrLost},
	})
	retry := start(idb)
	retry.Kind, retry.Attempt, retry.Position = baton.EventAcquireRetry, 1, 1
	grantB := ev(baton.EventGranted, idb, lb, "b#1")
	grantB.Depth, grantB.Wait = 1, ttl
	expect(t, "next holder b", rec.Acquire(idb), []want{
		{e: start(idb)},
		{e: retry},
		{e: grantB},
		{e: ev(baton.EventReleased, idb, lb, "b#1")},
	})
	expect(t, "fence", rec.Of(func(e baton.Event) bool { return e.Engine == "fence" }), []want{
		{e: baton.Event{Kind: baton.EventStaleRejected, Engine: "fence", Name: name, Resource: name,
			Token: la.Token(), Owner: la.Owner(), StoredToken: lb.Token(), StoredOwner: lb.Owner()}},
	})
	// Nobody else may be granted while a holder still believes it holds.
	all := rec.Events()
	lost := indexOf(all, func(e baton.Event) bool { return e.Kind == baton.EventLost && e.Acquire == ida })
	next := indexOf(all, func(e baton.Event) bool { return e.Kind == baton.EventGranted && e.Acquire == idb })
	if lost > next {
		t.Errorf("b was granted (event %d) before a's lease was Lost (event %d)", next, lost)
	}
}

func indexOf(events []baton.Event, match func(baton.Event) bool) int {
	for i, e := range events {
		if match(e) {
			return i
		}
	}
	return -1
}

// fencedWrite is a holder's write of resource under l's token.
func fencedWrite(ctx context.Context, db *sql.DB, tbl fence.Table, resource string, l *baton.Lease) error {
	return tbl.Write(ctx, db, resource, l.Token(), l.Owner(), func(*sql.Tx) error { return nil })
}

// TestObserverRecipes checks each recipe's label, that a writer reading
// is reported as a reentrant read, that a semaphore's internal guard
// mutex is not reported, and that a create whose response was lost is
// reported as recovered inside its acquire.
func TestObserverRecipes(t *testing.T) {
	rec := recorder.New()
	srv, _ := newServer(t, memlock.Options{Observer: rec})
	a := srv.Client("a")
	ctx := t.Context()
	summary := func(events []baton.Event) []string {
		var out []string
		for _, e := range events {
			s := e.Kind.String() + ":" + e.Recipe
			if e.Reentered {
				s += ":reentered"
			}
			out = append(out, s)
		}
		return out
	}
	check := func(what string, want ...string) {
		t.Helper()
		got := summary(rec.Events())
		if len(got) < len(want) || !slices.Equal(got[len(got)-len(want):], want) {
			t.Errorf("%s: events %q, want them to end with %q", what, got, want)
		}
	}

	rw, err := a.RWMutex("rw")
	if err != nil {
		t.Fatal(err)
	}
	w, err := rw.Lock(ctx)
	if err != nil {
		t.Fatalf("RWMutex.Lock = %v", err)
	}
	r, err := rw.RLock(w.Context())
	if err != nil || r != w {
		t.Fatalf("RLock under the write lease = %v, %v, want the write lease", r, err)
	}
	release(t, r)
	release(t, w)
	check("rwlock", "acquire_started:write", "granted:write", "acquire_started:read", "granted:read:reentered", "released:write")

	sem, err := a.Semaphore("sem", 2)
	if err != nil {
		t.Fatal(err)
	}
	p, err := sem.Acquire(ctx)
	if err != nil {
		t.Fatalf("Semaphore.Acquire = %v", err)
	}
	release(t, p)
	check("semaphore", "acquire_started:semaphore", "granted:semaphore", "released:semaphore")
	for _, e := range rec.Events() {
		if e.Name != "rw" && e.Name != "sem" {
			t.Errorf("event %v of %q: only the locks themselves are reported", e.Kind, e.Name)
		}
	}

	el, err := a.Election("el")
	if err != nil {
		t.Fatal(err)
	}
	ctl(a).LoseResponse(memlock.Create)
	ld, err := el.Campaign(ctx)
	if err != nil {
		t.Fatalf("Campaign = %v", err)
	}
	if err := ld.Resign(context.Background(), baton.ResignPlan{}); err != nil {
		t.Fatalf("Resign = %v", err)
	}
	check("election", "acquire_started:election", "recovered:", "granted:election", "released:election")
	started := rec.Of(func(e baton.Event) bool { return e.Name == "el" && e.Kind == baton.EventAcquireStarted })
	recovered := rec.Of(func(e baton.Event) bool { return e.Kind == baton.EventRecovered })
	if len(started) != 1 || len(recovered) != 1 || recovered[0].Acquire != started[0].Acquire ||
		recovered[0].Session != "a#1" || recovered[0].Count != 0 || recovered[0].Engine != "mem" || recovered[0].Owner == "" {
		t.Errorf("recovered = %+v, want one adoption by a#1 in acquire %v, no duplicates", recovered, started)
	}
}
