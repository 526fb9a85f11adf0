package batonotel_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/engine"
	"github.com/baton-go/baton/engine/leasekit/keeper"
	batonotel "github.com/baton-go/baton/otel"
)

var lock = []attribute.KeyValue{attribute.String("baton.engine", "mem"), attribute.String("baton.recipe", "mutex")}

func with(kv ...attribute.KeyValue) []attribute.KeyValue {
	return append(append([]attribute.KeyValue(nil), lock...), kv...)
}

// TestStory feeds the events of a contended mutex, a lost lease and a
// stale write under a request's span, and checks the spans and metrics.
func TestStory(t *testing.T) {
	r := newRig(t, batonotel.Options{})
	ctx, req := r.tracer.Start(t.Context(), "handle order")
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	ev := func(k baton.EventKind, id uint64, at time.Duration) baton.Event {
		return baton.Event{Kind: k, Time: t0.Add(at), Engine: "mem", Recipe: "mutex", Name: "orders/42", Acquire: id}
	}

	// The first holder waits behind a stranger for 250ms.
	a := engine.NextAcquireID()
	retry := ev(baton.EventAcquireRetry, a, 10*time.Millisecond)
	retry.Attempt, retry.Position = 1, 1
	g := ev(baton.EventGranted, a, 250*time.Millisecond)
	g.Wait, g.Token, g.Owner, g.Session, g.Depth = 250*time.Millisecond, 7, "entry-7", "s1", 1
	r.observe(ctx, ev(baton.EventAcquireStarted, a, 0), retry, g)

	// 100 waiters queue; the holder releases after 2s; they are granted
	// one by one, and all but the last release after 20ms.
	herd := make([]uint64, 100)
	for i := range herd {
		herd[i] = engine.NextAcquireID()
		r.observe(ctx, ev(baton.EventAcquireStarted, herd[i], time.Second))
	}
	r.collect().gauges("during the herd", 100, 1, 0, lock...)
	rel := ev(baton.EventReleased, a, 2250*time.Millisecond)
	rel.Hold = 2 * time.Second
	r.observe(ctx, rel)
	for i, id := range herd {
		at := 2250*time.Millisecond + time.Duration(i)*20*time.Millisecond
		gi := ev(baton.EventGranted, id, at)
		gi.Wait, gi.Token = time.Duration(i+1)*10*time.Millisecond, uint64(8+i)
		r.observe(ctx, gi)
		if i < len(herd)-1 {
			ri := ev(baton.EventReleased, id, at+20*time.Millisecond)
			ri.Hold = 20 * time.Millisecond
			r.observe(ctx, ri)
		}
	}
	r.collect().gauges("after the herd", 0, 1, 0, lock...)

	// The last holder is suspended, then lost on the keeper's deadline.
	last := herd[len(herd)-1]
	r.observe(ctx, ev(baton.EventSuspended, last, 5*time.Second))
	r.collect().gauges("suspended", 0, 1, 1, lock...)
	lost := ev(baton.EventLost, last, 8*time.Second)
	lost.Err = fmt.Errorf("%w: %w", baton.ErrLost, fmt.Errorf("%w (locks/orders/42)", keeper.ErrDeadline))
	lost.Hold, lost.Lead = 3*time.Second, 1500*time.Millisecond
	r.observe(ctx, lost)

	// Its delayed write is refused by the fenced resource.
	wctx, write := r.tracer.Start(ctx, "write order")
	r.observe(wctx, baton.Event{Kind: baton.EventStaleRejected, Engine: "fence", Resource: "orders", Name: "orders/42",
		Token: 107, Owner: "entry-107", StoredToken: 108, StoredOwner: "entry-108"})
	write.End()

	// A TryLock that finds the lock taken.
	f := engine.NextAcquireID()
	fail := ev(baton.EventAcquireFailed, f, 9*time.Second)
	fail.Err = fmt.Errorf("mem: %w", baton.ErrNotAcquired)
	r.observe(ctx, ev(baton.EventAcquireStarted, f, 9*time.Second), fail)
	req.End()

	checkStorySpans(t, r, a, last, f)
	checkStoryMetrics(t, r.collect())
	if n := r.o.Tracking(); n != 0 {
		t.Errorf("Tracking() = %d after every lease ended, want 0", n)
	}
}

func checkStorySpans(t *testing.T, r *rig, a, last, f uint64) {
	t.Helper()
	spans := r.spans.GetSpans()
	count := map[string]int{}
	for _, s := range spans {
		count[s.Name]++
	}
	if count["baton.acquire"] != 102 || count["baton.hold"] != 101 {
		t.Errorf("spans: %d baton.acquire, %d baton.hold; want 102 and 101", count["baton.acquire"], count["baton.hold"])
	}
	var req, write = spans[len(spans)-1], spans[len(spans)-3]
	if req.Name != "handle order" || write.Name != "write order" {
		t.Fatalf("request spans are %q and %q", req.Name, write.Name)
	}

	acq := byAcquire(t, spans, "baton.acquire", a)
	hold := byAcquire(t, spans, "baton.hold", a)
	if acq.Parent.SpanID() != req.SpanContext.SpanID() || hold.Parent.SpanID() != req.SpanContext.SpanID() {
		t.Errorf("acquire and hold spans are not children of the request span")
	}
	if len(hold.Links) != 1 || hold.Links[0].SpanContext.SpanID() != acq.SpanContext.SpanID() {
		t.Errorf("hold span links %v, want the acquire span", hold.Links)
	}
	if d := acq.EndTime.Sub(acq.StartTime); d != 250*time.Millisecond {
		t.Errorf("acquire span lasted %v, want 250ms", d)
	}
	if d := hold.EndTime.Sub(hold.StartTime); d != 2*time.Second {
		t.Errorf("hold span lasted %v, want 2s", d)
	}
	for _, c := range []struct {
		key  string
		want any
	}{{"baton.token", int64(7)}, {"baton.owner", "entry-7"}, {"baton.session", "s1"},
		{"baton.lock.name", "orders/42"}, {"baton.engine", "mem"}, {"baton.recipe", "mutex"}} {
		for _, s := range []string{"acquire", "hold"} {
			sp := map[string][]attribute.KeyValue{"acquire": acq.Attributes, "hold": hold.Attributes}[s]
			if v, _ := attr(sp, c.key); v.AsInterface() != c.want {
				t.Errorf("%s span %s = %v, want %v", s, c.key, v.AsInterface(), c.want)
			}
		}
	}
	if e, ok := hasEvent(acq, "baton.retry"); !ok {
		t.Error("acquire span has no baton.retry event")
	} else if v, _ := attr(e.Attributes, "baton.acquire.attempt"); v.AsInt64() != 1 {
		t.Errorf("retry attempt = %v, want 1", v.AsInt64())
	}
	if acq.Status.Code != codes.Unset || hold.Status.Code != codes.Unset {
		t.Errorf("granted and released spans have status %v and %v, want unset", acq.Status.Code, hold.Status.Code)
	}

	lh := byAcquire(t, spans, "baton.hold", last)
	if lh.Status.Code != codes.Error {
		t.Errorf("lost hold span status %v, want Error", lh.Status.Code)
	}
	if v, _ := attr(lh.Attributes, "baton.lost.cause"); v.AsString() != "deadline" {
		t.Errorf("baton.lost.cause = %q, want deadline", v.AsString())
	}
	if v, _ := attr(lh.Attributes, "baton.lost.lead"); !near(v.AsFloat64(), 1.5) {
		t.Errorf("baton.lost.lead = %v, want 1.5", v.AsFloat64())
	}
	if _, ok := hasEvent(lh, "baton.suspended"); !ok {
		t.Error("lost hold span has no baton.suspended event")
	}
	if _, ok := hasEvent(lh, "exception"); !ok {
		t.Error("lost hold span records no error")
	}

	fs := byAcquire(t, spans, "baton.acquire", f)
	if v, _ := attr(fs.Attributes, "baton.result"); fs.Status.Code != codes.Error || v.AsString() != "not_acquired" {
		t.Errorf("failed acquire span: status %v, result %q; want Error, not_acquired", fs.Status.Code, v.AsString())
	}

	e, ok := hasEvent(write, "baton.stale_rejected")
	if !ok {
		t.Fatal("write span has no baton.stale_rejected event")
	}
	for key, want := range map[string]int64{"baton.token": 107, "baton.stored_token": 108} {
		if v, _ := attr(e.Attributes, key); v.AsInt64() != want {
			t.Errorf("stale_rejected %s = %d, want %d", key, v.AsInt64(), want)
		}
	}
}

func checkStoryMetrics(t *testing.T, m metrics) {
	t.Helper()
	m.gauges("at the end", 0, 0, 0, lock...)
	for _, c := range []struct {
		name  string
		attrs []attribute.KeyValue
		want  int64
	}{
		{"baton.acquires", with(attribute.String("baton.result", "granted")), 101},
		{"baton.acquires", with(attribute.String("baton.result", "not_acquired")), 1},
		{"baton.acquire.retries", lock, 1},
		{"baton.suspensions", lock, 1},
		{"baton.losses", with(attribute.String("baton.lost.cause", "deadline")), 1},
		{"baton.stale_rejections", []attribute.KeyValue{attribute.String("baton.engine", "fence")}, 1},
	} {
		if got := m.sum(c.name, c.attrs...); got != c.want {
			t.Errorf("%s%v = %d, want %d", c.name, c.attrs, got, c.want)
		}
	}
	n, sum := m.hist("baton.acquire.wait", with(attribute.String("baton.result", "granted"))...)
	if n != 101 || !near(sum, 0.25+50.5) {
		t.Errorf("baton.acquire.wait granted: count %d sum %v, want 101 and 50.75", n, sum)
	}
	n, sum = m.hist("baton.hold", with(attribute.String("baton.hold.end", "released"))...)
	if n != 100 || !near(sum, 2+99*0.02) {
		t.Errorf("baton.hold released: count %d sum %v, want 100 and 3.98", n, sum)
	}
	n, sum = m.hist("baton.lost_lead", lock...)
	if n != 1 || !near(sum, 1.5) {
		t.Errorf("baton.lost_lead: count %d sum %v, want 1 and 1.5", n, sum)
	}
}

// TestLostBeforeGranted delivers a lease's loss before the grant that
// the acquire loop reports afterwards, as concurrent goroutines can.
func TestLostBeforeGranted(t *testing.T) {
	r := newRig(t, batonotel.Options{})
	ctx, req := r.tracer.Start(context.Background(), "job")
	id := engine.NextAcquireID()
	now := time.Now()
	ev := func(k baton.EventKind) baton.Event {
		return baton.Event{Kind: k, Time: now, Engine: "zk", Recipe: "write", Name: "jobs", Acquire: id, Token: 3}
	}
	lost := ev(baton.EventLost)
	lost.Err = fmt.Errorf("%w: %w", baton.ErrLost, baton.ErrSessionLost)
	r.observe(ctx, ev(baton.EventAcquireStarted), ev(baton.EventSuspended), lost, ev(baton.EventResumed), ev(baton.EventGranted))
	req.End()

	spans := r.spans.GetSpans()
	if len(spans) != 3 {
		t.Fatalf("%d spans, want 3 (acquire, hold, job)", len(spans))
	}
	hold := byAcquire(t, spans, "baton.hold", id)
	if hold.Status.Code != codes.Error || hold.Parent.SpanID() != req.SpanContext().SpanID() {
		t.Errorf("hold span: status %v, parent %v; want Error under the job span", hold.Status.Code, hold.Parent.SpanID())
	}
	if _, ok := hasEvent(hold, "baton.resumed"); ok {
		t.Error("a Resumed after the loss was recorded")
	}
	if acq := byAcquire(t, spans, "baton.acquire", id); acq.EndTime.IsZero() {
		t.Error("acquire span not ended")
	}
	r.collect().gauges("after the loss", 0, 0, 0, attribute.String("baton.engine", "zk"), attribute.String("baton.recipe", "write"))
	if n := r.o.Tracking(); n != 0 {
		t.Errorf("Tracking() = %d, want 0", n)
	}
}
