package batonprom_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/engine"
	"github.com/baton-go/baton/engine/leasekit/keeper"
	batonprom "github.com/baton-go/baton/prom"
)

// TestBackgroundAndResourceEvents covers the events that are not an
// acquire: keeper rounds, recovered creates, idempotency keys and tasks.
func TestBackgroundAndResourceEvents(t *testing.T) {
	s := newScraper(t, batonprom.Options{})
	renew := func(n int, d time.Duration, late bool, err error) baton.Event {
		return baton.Event{Kind: baton.EventRenewal, Engine: "redis", Count: n, Duration: d, Late: late, Err: err}
	}
	s.observe(
		renew(3, 2*time.Millisecond, false, nil),
		renew(3, 4*time.Millisecond, false, nil),
		renew(2, 700*time.Millisecond, true, nil),
		renew(2, time.Second, false, errors.New("i/o timeout")),
		baton.Event{Kind: baton.EventRecovered, Engine: "zk", Acquire: 9, Count: 1},
		baton.Event{Kind: baton.EventIdempotency, Engine: "idem", Resource: "k1", Outcome: "requesting"},
		baton.Event{Kind: baton.EventIdempotency, Engine: "idem", Resource: "k1", Outcome: "success"},
		baton.Event{Kind: baton.EventIdempotency, Engine: "idem", Resource: "k1", Outcome: "hit"},
		baton.Event{Kind: baton.EventIdempotency, Engine: "idem", Resource: "k1", Outcome: "from a future version"},
		baton.Event{Kind: baton.EventTask, Engine: "tasks", Resource: "t", Outcome: "claimed"},
		baton.Event{Kind: baton.EventTask, Engine: "tasks", Resource: "t", Outcome: "takeover", Duration: time.Minute},
		baton.Event{Kind: baton.EventReleaseFailed, Engine: "zk", Recipe: "mutex", Acquire: 10, Err: errors.New("connection reset")},
	)
	f := s.scrape()
	for _, c := range []struct {
		name, labels string
		want         float64
	}{
		{"baton_renewals_total", "engine=redis,result=ok", 2},
		{"baton_renewals_total", "engine=redis,result=late", 1},
		{"baton_renewals_total", "engine=redis,result=error", 1},
		{"baton_recovered_creates_total", "engine=zk", 1},
		{"baton_idempotency_total", "outcome=requesting", 1},
		{"baton_idempotency_total", "outcome=success", 1},
		{"baton_idempotency_total", "outcome=hit", 1},
		{"baton_idempotency_total", "outcome=other", 1},
		{"baton_tasks_total", "outcome=claimed", 1},
		{"baton_tasks_total", "outcome=takeover", 1},
		{"baton_release_failures_total", "engine=zk,recipe=mutex", 1},
	} {
		wantValue(t, c.name+"{"+c.labels+"}", f.value(t, c.name, c.labels), c.want)
	}
	n, sum := f.hist(t, "baton_renewal_batch_size", "engine=redis")
	wantCount(t, "renewal batches", n, 4)
	wantValue(t, "leases renewed", sum, 10)
	n, sum = f.hist(t, "baton_renewal_seconds", "engine=redis")
	wantCount(t, "renewal round trips", n, 4)
	wantValue(t, "renewal time", sum, 1.706)
	wantCount(t, "renewals ≤ 5ms", f.bucket(t, "baton_renewal_seconds", "engine=redis", 0.005), 2)
	lintClean(t, s.c)
}

func lintClean(t *testing.T, c *batonprom.Collector) {
	t.Helper()
	problems, err := testutil.CollectAndLint(c)
	if err != nil {
		t.Fatalf("CollectAndLint: %v", err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}

// TestOutOfOrder delivers a lease's events in the orders that separate
// goroutines can produce, and checks that no gauge goes below zero or
// stays up after the lease ended.
func TestOutOfOrder(t *testing.T) {
	s := newScraper(t, batonprom.Options{})
	ev := func(k baton.EventKind, id uint64) baton.Event {
		return baton.Event{Kind: k, Engine: "zk", Recipe: "read", Acquire: id}
	}
	lostErr := fmt.Errorf("%w: %w", baton.ErrLost, baton.ErrSessionLost)
	lost := func(id uint64) baton.Event { e := ev(baton.EventLost, id); e.Err = lostErr; return e }

	// The watcher suspends and loses the lease before the acquire loop
	// reports the grant.
	a := engine.NextAcquireID()
	s.observe(ev(baton.EventAcquireStarted, a), ev(baton.EventSuspended, a), lost(a), ev(baton.EventGranted, a))
	// A Suspended emitted before a concurrent Lost is delivered after it.
	b := engine.NextAcquireID()
	s.observe(ev(baton.EventAcquireStarted, b), ev(baton.EventGranted, b), lost(b), ev(baton.EventSuspended, b), ev(baton.EventResumed, b))
	// The end of a lease the Collector never saw start.
	s.observe(ev(baton.EventReleased, engine.NextAcquireID()), lost(engine.NextAcquireID()))
	// Events without an acquire ID count but cannot be tracked.
	s.observe(ev(baton.EventAcquireStarted, 0), ev(baton.EventGranted, 0))
	// A re-entrant grant adds a hold to a held lease, not a lease.
	c := engine.NextAcquireID()
	re := ev(baton.EventGranted, c)
	re.Reentered, re.Depth = true, 2
	s.observe(ev(baton.EventAcquireStarted, c), re)

	f := s.scrape()
	f.gauges(t, "after the stragglers", "engine=zk,recipe=read", 0, 0, 0)
	wantValue(t, "session_expired losses", f.value(t, "baton_losses_total", "engine=zk,recipe=read,cause=session_expired"), 3)
	wantValue(t, "grants", f.value(t, "baton_acquires_total", "engine=zk,recipe=read,result=granted"), 4)
	if got := s.c.Tracking(); got != 0 {
		t.Errorf("Tracking() = %d, want 0", got)
	}
}

// TestConcurrentLeases runs many leases' events on many goroutines, the
// end of each racing its suspension, and checks the gauges return to 0.
func TestConcurrentLeases(t *testing.T) {
	s := newScraper(t, batonprom.Options{})
	const n = 200
	var wg sync.WaitGroup
	for i := range n {
		id := engine.NextAcquireID()
		ev := func(k baton.EventKind) baton.Event {
			return baton.Event{Kind: k, Engine: "etcd", Recipe: "semaphore", Acquire: id, Err: nil}
		}
		wg.Go(func() {
			s.observe(ev(baton.EventAcquireStarted), ev(baton.EventGranted))
			var inner sync.WaitGroup
			inner.Go(func() { s.observe(ev(baton.EventSuspended), ev(baton.EventResumed)) })
			end := ev(baton.EventReleased)
			if i%2 == 0 {
				end = ev(baton.EventLost)
				end.Err = fmt.Errorf("%w: %w", baton.ErrLost, keeper.ErrGone)
			}
			s.observe(end)
			inner.Wait()
		})
	}
	wg.Wait()
	f := s.scrape()
	f.gauges(t, "after all leases ended", "engine=etcd,recipe=semaphore", 0, 0, 0)
	wantValue(t, "grants", f.value(t, "baton_acquires_total", "engine=etcd,recipe=semaphore,result=granted"), n)
	wantValue(t, "losses", f.value(t, "baton_losses_total", "engine=etcd,recipe=semaphore,cause=gone"), n/2)
	n2, _ := f.hist(t, "baton_hold_seconds", "engine=etcd,recipe=semaphore,end=released")
	wantCount(t, "releases", n2, n/2)
}

// TestLockNames checks the opt-in name label, and that under
// baton.HashNames it carries the pseudonym, never the name.
func TestLockNames(t *testing.T) {
	s := newScraper(t, batonprom.Options{LockNames: true})
	o := baton.HashNames([]byte("key"), s.c)
	id := engine.NextAcquireID()
	for _, k := range []baton.EventKind{baton.EventAcquireStarted, baton.EventGranted} {
		o.Observe(context.Background(), baton.Event{Kind: k, Engine: "mem", Recipe: "mutex", Name: "tenant/acme", Acquire: id})
	}
	var hashed string
	baton.HashNames([]byte("key"), baton.ObserverFunc(func(_ context.Context, e baton.Event) { hashed = e.Name })).
		Observe(context.Background(), baton.Event{Name: "tenant/acme"})
	f := s.scrape()
	want := lock + ",name=" + hashed
	wantValue(t, "held by pseudonym", f.value(t, "baton_leases_held", want), 1)
	wantValue(t, "grants by pseudonym", f.value(t, "baton_acquires_total", want+",result=granted"), 1)
	for _, m := range f["baton_acquires_total"].GetMetric() {
		if hasLabels(m, "name=tenant/acme") {
			t.Errorf("baton_acquires_total carries the plain lock name")
		}
	}
	lintClean(t, s.c)
}

// TestMaxTracked checks the bound on tracked acquires: beyond it the
// gauges read low but the counters still count.
func TestMaxTracked(t *testing.T) {
	s := newScraper(t, batonprom.Options{MaxTracked: 2})
	ids := []uint64{engine.NextAcquireID(), engine.NextAcquireID(), engine.NextAcquireID()}
	ev := func(k baton.EventKind, id uint64) baton.Event {
		return baton.Event{Kind: k, Engine: "mem", Recipe: "mutex", Acquire: id}
	}
	for _, id := range ids {
		s.observe(ev(baton.EventAcquireStarted, id))
	}
	s.scrape().gauges(t, "three started, two tracked", lock, 2, 0, 0)
	if got := s.c.Tracking(); got != 2 {
		t.Errorf("Tracking() = %d, want 2", got)
	}
	for _, id := range ids {
		s.observe(ev(baton.EventGranted, id))
	}
	f := s.scrape()
	f.gauges(t, "three granted", lock, 0, 2, 0)
	wantValue(t, "grants", f.value(t, "baton_acquires_total", lock+",result=granted"), 3)
	for _, id := range ids {
		s.observe(ev(baton.EventReleased, id))
	}
	s.scrape().gauges(t, "all released", lock, 0, 0, 0)
}
