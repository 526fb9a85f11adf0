package leasekit_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/engine/leasekit"
	"github.com/baton-go/baton/engine/leasekit/keeper"
	"github.com/baton-go/baton/internal/recorder"
)

// wantEvent checks the fields an acquire event shares with every other.
func wantEvent(t *testing.T, e baton.Event, kind baton.EventKind, id uint64) {
	t.Helper()
	if e.Kind != kind || e.Engine != "mem" || e.Name != "x" || e.Recipe != "mutex" || e.Acquire != id || e.Time.IsZero() {
		t.Errorf("event %+v, want %v of acquire %d, Engine mem, Name x, Recipe mutex, Time set", e, kind, id)
	}
}

// acquireIDs returns the IDs of the acquires started, in order.
func acquireIDs(rec *recorder.Recorder) []uint64 {
	var ids []uint64
	for _, e := range rec.Of(func(e baton.Event) bool { return e.Kind == baton.EventAcquireStarted }) {
		ids = append(ids, e.Acquire)
	}
	return ids
}

// TestObservedAcquires follows one lock through a grant, a re-entry, a
// refused TryLock and a waiter granted after the release: each acquire's
// events are exactly those the queue recipes report.
func TestObservedAcquires(t *testing.T) {
	rec := recorder.New()
	// A long backoff step: the waiter's only retry before the release is
	// its first refusal, and the release's wake-up ends its sleep.
	slow := baton.Backoff{Base: time.Hour, Max: time.Hour, Rand: func() float64 { return 1 }}
	e, s := newEngine(t, leasekit.Options{TTL: 10 * time.Second, Backoff: slow, Observer: rec})
	m, _ := e.Mutex("x")
	l, err := m.Lock(opCtx(t, time.Second))
	if err != nil {
		t.Fatalf("Lock = %v", err)
	}
	inner, err := m.Lock(l.Context())
	if err != nil || inner != l {
		t.Fatalf("re-entrant Lock = %v, %v, want the same lease", inner, err)
	}
	_ = inner.Release(context.Background())
	if _, err := m.TryLock(opCtx(t, time.Second)); !errors.Is(err, baton.ErrNotAcquired) {
		t.Fatalf("TryLock while held = %v, want %v", err, baton.ErrNotAcquired)
	}
	type result struct {
		l   *baton.Lease
		err error
	}
	ch := make(chan result, 1)
	go func() {
		l, err := m.Lock(opCtx(t, 10*time.Second))
		ch <- result{l, err}
	}()
	if _, ok := rec.WaitFor(10*time.Second, func(e baton.Event) bool { return e.Kind == baton.EventAcquireRetry }); !ok {
		t.Fatal("the waiter reported no retry")
	}
	if err := l.Release(context.Background()); err != nil {
		t.Fatalf("Release = %v", err)
	}
	s.wakeAll()
	r := <-ch
	if r.err != nil {
		t.Fatalf("waiter's Lock = %v", r.err)
	}
	defer r.l.Release(context.Background())

	ids := acquireIDs(rec)
	if len(ids) != 4 {
		t.Fatalf("%d acquires started, want 4: %+v", len(ids), rec.Events())
	}
	want := [][]baton.EventKind{
		{baton.EventAcquireStarted, baton.EventGranted, baton.EventReleased},
		{baton.EventAcquireStarted, baton.EventGranted},
		{baton.EventAcquireStarted, baton.EventAcquireFailed},
		{baton.EventAcquireStarted, baton.EventAcquireRetry, baton.EventGranted},
	}
	for i, id := range ids {
		evs := rec.Acquire(id)
		if kinds := recorder.Kinds(evs); !slices.Equal(kinds, want[i]) {
			t.Fatalf("acquire %d: events %v, want %v", i, kinds, want[i])
		}
		for _, ev := range evs {
			wantEvent(t, ev, ev.Kind, id)
		}
	}
	first, reentry, try, waiter := rec.Acquire(ids[0]), rec.Acquire(ids[1]), rec.Acquire(ids[2]), rec.Acquire(ids[3])
	if g := first[1]; g.Token != l.Token() || g.Owner != l.Owner() || g.Depth != 1 || g.Reentered || g.Wait < 0 {
		t.Errorf("first grant %+v, want Token %d, Owner %s, Depth 1, not reentered", g, l.Token(), l.Owner())
	}
	if g := reentry[1]; g.Token != l.Token() || g.Depth != 2 || !g.Reentered {
		t.Errorf("re-entry %+v, want Token %d, Depth 2, Reentered", g, l.Token())
	}
	if f := try[1]; !errors.Is(f.Err, baton.ErrNotAcquired) {
		t.Errorf("TryLock's failure %+v, want Err wrapping %v", f, baton.ErrNotAcquired)
	}
	if rt := waiter[1]; rt.Attempt != 1 || rt.Position != -1 || rt.Err != nil {
		t.Errorf("waiter's retry %+v, want Attempt 1, Position -1, no Err (refused)", rt)
	}
	if g := waiter[2]; g.Token != r.l.Token() || g.Token <= l.Token() || g.Owner != r.l.Owner() || g.Wait <= 0 {
		t.Errorf("waiter's grant %+v, want Token %d > %d, Owner %s, Wait > 0", g, r.l.Token(), l.Token(), r.l.Owner())
	}
}

// TestObservedFailedAttempt: an attempt that fails (outcome unknown) is a
// retry with its error; the next one grants.
func TestObservedFailedAttempt(t *testing.T) {
	rec := recorder.New()
	fast := baton.Backoff{Base: time.Millisecond, Max: time.Millisecond}
	e, s := newEngine(t, leasekit.Options{Backoff: fast, Observer: rec})
	errDown := errors.New("store down")
	s.try = func(_ context.Context, n int) (leasekit.Result, error) {
		if n == 0 {
			return leasekit.Result{Sent: time.Now()}, errDown
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		s.holders["x"] = "o"
		return leasekit.Result{Granted: true, Token: 1, Sent: time.Now(), Ref: keeper.Ref{Key: "x", Owner: "o"}}, nil
	}
	m, _ := e.Mutex("x")
	l, err := m.Lock(opCtx(t, 5*time.Second))
	if err != nil {
		t.Fatalf("Lock = %v", err)
	}
	defer l.Release(context.Background())
	evs := rec.Events()
	if kinds := recorder.Kinds(evs); !slices.Equal(kinds, []baton.EventKind{baton.EventAcquireStarted, baton.EventAcquireRetry, baton.EventGranted}) {
		t.Fatalf("events %v, want [acquire_started acquire_retry granted]", kinds)
	}
	if rt := evs[1]; rt.Attempt != 1 || rt.Position != -1 || !errors.Is(rt.Err, errDown) {
		t.Errorf("retry %+v, want Attempt 1, Position -1, Err %v", rt, errDown)
	}
}

// BenchmarkLockUnlock is the uncontended Lock and Release on the map
// engine of the package example: without an Observer the acquire costs
// what it cost before acquires were observed (compare allocs/op).
func BenchmarkLockUnlock(b *testing.B) {
	for _, c := range []struct {
		name string
		obs  baton.Observer
	}{
		{"nil", nil},
		{"observed", baton.ObserverFunc(func(context.Context, baton.Event) {})},
	} {
		b.Run(c.name, func(b *testing.B) {
			o, err := leasekit.Options{TTL: time.Minute, Observer: c.obs}.Validate("maplock")
			if err != nil {
				b.Fatal(err)
			}
			m := &mapEngine{owners: make(map[string]string)}
			k, err := keeper.New(m, keeper.Options{TTL: o.TTL, DriftMargin: o.DriftMargin, Backoff: o.Backoff})
			if err != nil {
				b.Fatal(err)
			}
			defer k.Close()
			e := &leasekit.Engine{Name: "map", Pkg: "maplock", Opts: o, Keeper: k, Store: m,
				Ctx: context.Background(), Err: func() error { return nil }}
			mu, _ := e.Mutex("bench")
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				l, err := mu.Lock(ctx)
				if err != nil {
					b.Fatal(err)
				}
				if err := l.Release(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
