package batonotel_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/engine"
	"github.com/baton-go/baton/engine/leasekit/keeper"
	batonotel "github.com/baton-go/baton/otel"
	"github.com/baton-go/baton/testkit/obsviewtest"
)

// TestLeaseEvents drives real leases through suspension, recovery, loss
// and release: the lease's own events land on the hold span under the
// span of the context the acquire was made with.
func TestLeaseEvents(t *testing.T) {
	r := newRig(t, batonotel.Options{})
	ctx, req := r.tracer.Start(t.Context(), "leader term")

	l1, ctl1, id1 := obsviewtest.Grant(ctx, r.o, "orders/1", 1)
	l2, _, id2 := obsviewtest.Grant(ctx, r.o, "orders/2", 2)
	r.collect().gauges("two held", 0, 2, 0, lock...)
	ctl1.Suspend()
	ctl1.Resume()
	if !ctl1.Lose(fmt.Errorf("%w (locks/orders/1)", keeper.ErrGone)) {
		t.Fatal("Lose did not end the lease")
	}
	if err := l1.Release(context.Background()); !errors.Is(err, baton.ErrLost) {
		t.Fatalf("Release of a lost lease = %v, want ErrLost", err)
	}
	if err := l2.Release(context.Background()); err != nil {
		t.Fatalf("Release = %v", err)
	}
	req.End()

	spans := r.spans.GetSpans()
	h1, h2 := byAcquire(t, spans, "baton.hold", id1), byAcquire(t, spans, "baton.hold", id2)
	for _, h := range []struct {
		name string
		id   uint64
	}{{"lost", id1}, {"released", id2}} {
		s := byAcquire(t, spans, "baton.hold", h.id)
		if s.Parent.SpanID() != req.SpanContext().SpanID() {
			t.Errorf("%s hold span is not a child of the acquiring span", h.name)
		}
		if v, _ := attr(s.Attributes, "baton.hold.end"); v.AsString() != h.name {
			t.Errorf("hold span baton.hold.end = %q, want %q", v.AsString(), h.name)
		}
	}
	var names []string
	for _, e := range h1.Events {
		names = append(names, e.Name)
	}
	if fmt.Sprint(names) != "[baton.suspended baton.resumed exception]" {
		t.Errorf("lost hold span events %v, want [baton.suspended baton.resumed exception]", names)
	}
	if v, _ := attr(h1.Attributes, "baton.lost.cause"); h1.Status.Code != codes.Error || v.AsString() != "gone" {
		t.Errorf("lost hold span: status %v, cause %q; want Error, gone", h1.Status.Code, v.AsString())
	}
	if h2.Status.Code != codes.Unset {
		t.Errorf("released hold span status %v, want unset", h2.Status.Code)
	}
	m := r.collect()
	m.gauges("all ended", 0, 0, 0, lock...)
	if got := m.sum("baton.losses", with(attribute.String("baton.lost.cause", "gone"))...); got != 1 {
		t.Errorf("baton.losses{gone} = %d, want 1", got)
	}
	if n, _ := m.hist("baton.suspension", lock...); n != 1 {
		t.Errorf("baton.suspension count = %d, want 1", n)
	}
}

// TestConcurrentLeases runs many leases on many goroutines, each loss
// racing the lease's suspension, and checks every span ends and every
// gauge returns to 0.
func TestConcurrentLeases(t *testing.T) {
	r := newRig(t, batonotel.Options{})
	const n = 100
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			l, ctl, _ := obsviewtest.Grant(context.Background(), r.o, fmt.Sprint("jobs/", i), uint64(i+1))
			var inner sync.WaitGroup
			inner.Go(func() { ctl.Suspend(); ctl.Resume() })
			if i%2 == 0 {
				ctl.Lose(fmt.Errorf("%w: %w", baton.ErrLost, baton.ErrClosed))
			} else {
				_ = l.Release(context.Background())
			}
			inner.Wait()
		})
	}
	wg.Wait()
	count := map[string]int{}
	for _, s := range r.spans.GetSpans() {
		if s.EndTime.IsZero() {
			t.Errorf("span %s not ended", s.Name)
		}
		count[s.Name]++
	}
	if count["baton.acquire"] != n || count["baton.hold"] != n {
		t.Errorf("spans %v, want %d of each", count, n)
	}
	m := r.collect()
	m.gauges("after all leases ended", 0, 0, 0, lock...)
	if got := m.sum("baton.losses", with(attribute.String("baton.lost.cause", "closed"))...); got != n/2 {
		t.Errorf("baton.losses{closed} = %d, want %d", got, n/2)
	}
	if k := r.o.Tracking(); k != 0 {
		t.Errorf("Tracking() = %d, want 0", k)
	}
}

// TestLockNames checks the opt-in name attribute on metrics, and that
// under baton.HashNames spans and metrics carry only the pseudonym.
func TestLockNames(t *testing.T) {
	r := newRig(t, batonotel.Options{LockNames: true})
	o := baton.HashNames([]byte("key"), r.o)
	l, _, id := obsviewtest.Grant(context.Background(), o, "tenant/acme", 1)
	_ = l.Release(context.Background())
	hold := byAcquire(t, r.spans.GetSpans(), "baton.hold", id)
	v, _ := attr(hold.Attributes, "baton.lock.name")
	if v.AsString() == "tenant/acme" || len(v.AsString()) != len("h:")+16 {
		t.Errorf("hold span baton.lock.name = %q, want a pseudonym", v.AsString())
	}
	if got := r.collect().sum("baton.acquires", with(attribute.String("baton.result", "granted"), attribute.String("baton.lock.name", v.AsString()))...); got != 1 {
		t.Errorf("baton.acquires by pseudonym = %d, want 1", got)
	}
}

// TestMaxTracked checks the bound on open spans: an acquire beyond it
// gets no acquire span, its lease gets a hold span only once there is
// room (backdated to the grant), and it is counted all the same.
func TestMaxTracked(t *testing.T) {
	r := newRig(t, batonotel.Options{MaxTracked: 2})
	var leases []*baton.Lease
	ids := []uint64{engine.NextAcquireID(), engine.NextAcquireID(), engine.NextAcquireID()}
	for _, id := range ids {
		r.o.Observe(context.Background(), baton.Event{Kind: baton.EventAcquireStarted, Engine: "mem", Recipe: "mutex", Acquire: id})
	}
	if n := r.o.Tracking(); n != 2 {
		t.Errorf("Tracking() = %d with three acquires open, want 2", n)
	}
	for _, id := range ids {
		l, _ := engine.NewLease(context.Background(), engine.Grant{Engine: "mem", Recipe: "mutex", Observer: r.o, Acquire: id})
		r.o.Observe(context.Background(), baton.Event{Kind: baton.EventGranted, Engine: "mem", Recipe: "mutex", Acquire: id, Depth: 1})
		leases = append(leases, l)
	}
	if n := r.o.Tracking(); n != 2 {
		t.Errorf("Tracking() = %d with three leases held, want 2", n)
	}
	for _, l := range leases {
		if err := l.Release(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	count := map[string]int{}
	for _, s := range r.spans.GetSpans() {
		count[s.Name]++
	}
	if count["baton.acquire"] != 2 || count["baton.hold"] != 3 {
		t.Errorf("spans %v, want 2 baton.acquire and 3 baton.hold", count)
	}
	m := r.collect()
	if got := m.sum("baton.acquires", with(attribute.String("baton.result", "granted"))...); got != 3 {
		t.Errorf("baton.acquires = %d, want 3", got)
	}
	m.gauges("all released", 0, 0, 0, lock...)
	if n := r.o.Tracking(); n != 0 {
		t.Errorf("Tracking() = %d, want 0", n)
	}
}
