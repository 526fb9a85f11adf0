package batonprom_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/engine"
	"github.com/baton-go/baton/engine/leasekit/keeper"
	batonprom "github.com/baton-go/baton/prom"
)

const lock = "engine=mem,recipe=mutex"

// TestStory feeds the events of a contended mutex, a lost lease and a
// stale write, and checks every figure a scrape shows at each step.
func TestStory(t *testing.T) {
	s := newScraper(t, batonprom.Options{})
	ev := func(k baton.EventKind, id uint64) baton.Event {
		return baton.Event{Kind: k, Engine: "mem", Recipe: "mutex", Name: "orders/42", Acquire: id}
	}

	// A first holder waits behind a stranger, then is granted.
	a := engine.NextAcquireID()
	retry := ev(baton.EventAcquireRetry, a)
	retry.Attempt, retry.Position = 1, 1
	granted := ev(baton.EventGranted, a)
	granted.Wait, granted.Token, granted.Depth = 250*time.Millisecond, 7, 1
	s.observe(ev(baton.EventAcquireStarted, a), retry, granted)
	f := s.scrape()
	f.gauges(t, "after the first grant", lock, 0, 1, 0)
	wantValue(t, "baton_acquire_retries_total", f.value(t, "baton_acquire_retries_total", lock), 1)

	// A herd of 100 waiters queues behind it.
	herd := make([]uint64, 100)
	for i := range herd {
		herd[i] = engine.NextAcquireID()
		s.observe(ev(baton.EventAcquireStarted, herd[i]))
	}
	s.scrape().gauges(t, "during the herd", lock, 100, 1, 0)

	// The holder releases; the waiters are granted one by one, and all but
	// the last release after 20ms.
	rel := ev(baton.EventReleased, a)
	rel.Hold = 2 * time.Second
	s.observe(rel)
	for i, id := range herd {
		g := ev(baton.EventGranted, id)
		g.Wait = time.Duration(i+1) * 10 * time.Millisecond
		s.observe(g)
		if i == 49 {
			s.scrape().gauges(t, "half the herd through", lock, 50, 1, 0)
		}
		if i < len(herd)-1 {
			r := ev(baton.EventReleased, id)
			r.Hold = 20 * time.Millisecond
			s.observe(r)
		}
	}
	s.scrape().gauges(t, "after the herd", lock, 0, 1, 0)

	// The last holder's renewals stop answering: suspended, then lost on
	// the keeper's deadline with 1.5s to spare.
	last := herd[len(herd)-1]
	s.observe(ev(baton.EventSuspended, last))
	s.scrape().gauges(t, "suspended", lock, 0, 1, 1)
	lost := ev(baton.EventLost, last)
	lost.Err = fmt.Errorf("%w: %w", baton.ErrLost, fmt.Errorf("%w (locks/orders/42)", keeper.ErrDeadline))
	lost.Hold, lost.Lead = 3*time.Second, 1500*time.Millisecond
	s.observe(lost)

	// Its delayed write reaches the fenced resource, which refuses it.
	s.observe(baton.Event{Kind: baton.EventStaleRejected, Engine: "fence", Resource: "orders", Name: "orders/42",
		Token: 101, StoredToken: 102, Owner: "old", StoredOwner: "new"})

	// Three acquires that fail, three ways.
	for i, err := range []error{
		baton.ErrNotAcquired,
		fmt.Errorf("%w: %w", baton.ErrUnavailable, context.DeadlineExceeded),
		fmt.Errorf("mem: lock: %w", context.Canceled),
	} {
		id := engine.NextAcquireID()
		fail := ev(baton.EventAcquireFailed, id)
		fail.Wait, fail.Err = time.Duration(i)*time.Second, err
		s.observe(ev(baton.EventAcquireStarted, id), fail)
	}

	f = s.scrape()
	f.gauges(t, "at the end", lock, 0, 0, 0)
	for _, c := range []struct {
		name, labels string
		want         float64
	}{
		{"baton_acquires_total", lock + ",result=granted", 101},
		{"baton_acquires_total", lock + ",result=not_acquired", 1},
		{"baton_acquires_total", lock + ",result=unavailable", 1},
		{"baton_acquires_total", lock + ",result=cancelled", 1},
		{"baton_suspensions_total", lock, 1},
		{"baton_losses_total", lock + ",cause=deadline", 1},
		{"baton_stale_rejections_total", "engine=fence", 1},
	} {
		wantValue(t, c.name+"{"+c.labels+"}", f.value(t, c.name, c.labels), c.want)
	}

	// Waits: 250ms, then 10ms, 20ms, … 1s for the herd.
	n, sum := f.hist(t, "baton_acquire_wait_seconds", lock+",result=granted")
	wantCount(t, "granted wait count", n, 101)
	wantValue(t, "granted wait sum", sum, 0.25+50.5)
	wantCount(t, "granted waits ≤ 250ms", f.bucket(t, "baton_acquire_wait_seconds", lock+",result=granted", 0.25), 26)
	wantCount(t, "granted waits ≤ 1s", f.bucket(t, "baton_acquire_wait_seconds", lock+",result=granted", 1), 101)
	n, sum = f.hist(t, "baton_hold_seconds", lock+",end=released")
	wantCount(t, "released hold count", n, 100)
	wantValue(t, "released hold sum", sum, 2+99*0.02)
	n, sum = f.hist(t, "baton_hold_seconds", lock+",end=lost")
	wantCount(t, "lost hold count", n, 1)
	wantValue(t, "lost hold sum", sum, 3)
	n, sum = f.hist(t, "baton_lost_lead_seconds", lock)
	wantCount(t, "lost lead count", n, 1)
	wantValue(t, "lost lead sum", sum, 1.5)
	if got := s.c.Tracking(); got != 0 {
		t.Errorf("Tracking() = %d after every lease ended, want 0", got)
	}

	problems, err := testutil.CollectAndLint(s.c)
	if err != nil {
		t.Fatalf("CollectAndLint: %v", err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
	// The 11 the story moves, and the idempotency and task counters shown
	// at 0 from the start.
	if len(f) != 13 {
		t.Errorf("scrape has %d metric families, want 13: %v", len(f), keys(f))
	}
}

func keys(f families) []string {
	var ks []string
	for k := range f {
		ks = append(ks, k)
	}
	return ks
}
