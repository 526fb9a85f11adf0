package batonotel_test

import (
	"context"
	"encoding/json"
	"os"
	"strconv"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/baton-go/baton/engine"
	batonotel "github.com/baton-go/baton/otel"
	"github.com/baton-go/baton/testkit/storytest"
)

func TestMain(m *testing.M) {
	if storytest.IsHolder() {
		os.Exit(storytest.HolderMain(newChild))
	}
	os.Exit(m.Run())
}

// newChild gives the paused holder an Observer on in-memory SDK
// providers, and a span of its own ("holder.job") to take the lock and
// make its late write in; it dumps its spans and its counters as JSON.
func newChild() (storytest.Child, error) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	o, err := batonotel.New(batonotel.Options{TracerProvider: tp, MeterProvider: mp})
	if err != nil {
		return storytest.Child{}, err
	}
	return storytest.Child{
		Observer: o,
		Job: func(ctx context.Context) (context.Context, func()) {
			ctx, job := tp.Tracer("holder").Start(ctx, "holder.job")
			return ctx, func() { job.End() }
		},
		Dump: func(ctx context.Context, path string) error {
			var rm metricdata.ResourceMetrics
			if err := reader.Collect(ctx, &rm); err != nil {
				return err
			}
			return writeDump(path, exp.GetSpans(), rm)
		},
	}, nil
}

// dump is what the child hands the parent.
type dump struct {
	Spans []spanJSON
	Sums  []pointJSON // every int64 counter and up-down counter point
}

type spanJSON struct {
	Name, SpanID, ParentID string
	Status                 string // "Error", "Unset", "Ok"
	Attrs                  map[string]string
	Events                 []eventJSON
}

type eventJSON struct {
	Name  string
	Attrs map[string]string
}

type pointJSON struct {
	Name  string
	Attrs map[string]string
	Value int64
}

func attrMap(kvs []attribute.KeyValue) map[string]string {
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		m[string(kv.Key)] = kv.Value.Emit()
	}
	return m
}

func writeDump(path string, spans tracetest.SpanStubs, rm metricdata.ResourceMetrics) error {
	var d dump
	for _, s := range spans {
		sj := spanJSON{Name: s.Name, SpanID: s.SpanContext.SpanID().String(), ParentID: s.Parent.SpanID().String(),
			Status: s.Status.Code.String(), Attrs: attrMap(s.Attributes)}
		for _, e := range s.Events {
			sj.Events = append(sj.Events, eventJSON{Name: e.Name, Attrs: attrMap(e.Attributes)})
		}
		d.Spans = append(d.Spans, sj)
	}
	for _, sm := range rm.ScopeMetrics {
		for _, mt := range sm.Metrics {
			if sum, ok := mt.Data.(metricdata.Sum[int64]); ok {
				for _, dp := range sum.DataPoints {
					d.Sums = append(d.Sums, pointJSON{Name: mt.Name, Attrs: attrMap(dp.Attributes.ToSlice()), Value: dp.Value})
				}
			}
		}
	}
	b, err := json.Marshal(d)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o600)
}

// TestPausedHolderZK is the paused-holder story on a real ZooKeeper, in
// two processes, as its spans tell it: the child holder is cut off (a
// blackhole at a fault proxy), reports Suspended, and is SIGSTOPped past
// its session timeout; the parent is granted the lock with a larger token
// and writes; the child, resumed, finds its lease lost and its late write
// refused. (Cut off first because a process stopped while healthy wakes
// past the loss threshold and goes from Held straight to Lost.) The
// child's spans must be one baton.acquire and one baton.hold, the hold
// ended in error with the child's token and a baton.suspended event, and
// the job span must carry the stale rejection with the parent's token.
func TestPausedHolderZK(t *testing.T) {
	name := "baton-test/otel-paused/" + engine.NewOwnerID()[:8]
	r := newRig(t, batonotel.Options{})
	story := storytest.PausedHolder(t, name, "holder.json", r.o)
	lb, childToken := story.Lease, story.ChildToken

	b, err := os.ReadFile(story.Out)
	if err != nil {
		t.Fatal(err)
	}
	var d dump
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("holder's JSON: %v", err)
	}
	checkChildSpans(t, d.Spans, name, childToken, lb.Token())
	checkChildSums(t, d.Sums)

	// The parent's own spans: its acquire granted with the larger token,
	// and its hold still open.
	spans := r.spans.GetSpans()
	if len(spans) != 1 || spans[0].Name != "baton.acquire" {
		t.Fatalf("parent's ended spans: %d, want its one baton.acquire", len(spans))
	}
	if v, _ := attr(spans[0].Attributes, "baton.token"); v.AsInt64() != int64(lb.Token()) {
		t.Errorf("parent's acquire span: baton.token %v, want %d", v.Emit(), lb.Token())
	}
	if v, _ := attr(spans[0].Attributes, "baton.result"); v.AsString() != "granted" {
		t.Errorf("parent's acquire span: baton.result %q, want granted", v.Emit())
	}
	if err := lb.Release(t.Context()); err != nil {
		t.Errorf("Release = %v", err)
	}
}

func checkChildSpans(t *testing.T, spans []spanJSON, name string, childToken, storedToken uint64) {
	t.Helper()
	byName := map[string][]spanJSON{}
	for _, s := range spans {
		byName[s.Name] = append(byName[s.Name], s)
	}
	if len(spans) != 3 || len(byName["baton.acquire"]) != 1 || len(byName["baton.hold"]) != 1 || len(byName["holder.job"]) != 1 {
		t.Fatalf("holder's spans %v, want one each of baton.acquire, baton.hold, holder.job", byName)
	}
	acq, hold, job := byName["baton.acquire"][0], byName["baton.hold"][0], byName["holder.job"][0]
	tok := strconv.FormatUint(childToken, 10)
	if acq.Status != "Unset" || acq.Attrs["baton.result"] != "granted" || acq.Attrs["baton.token"] != tok {
		t.Errorf("holder's acquire span %+v, want granted with token %s", acq, tok)
	}
	if hold.Status != "Error" || hold.Attrs["baton.token"] != tok || hold.Attrs["baton.hold.end"] != "lost" || hold.Attrs["baton.lock.name"] != name {
		t.Errorf("holder's hold span %+v, want lost (error) with token %s", hold, tok)
	}
	t.Logf("holder's hold span: baton.lost.cause=%q", hold.Attrs["baton.lost.cause"])
	if c := hold.Attrs["baton.lost.cause"]; c != "session_expired" && c != "other" {
		t.Errorf("hold span cause %q, want session_expired (or other, before the queue wraps baton.ErrSessionLost)", c)
	}
	var suspended int
	for _, e := range hold.Events {
		if e.Name == "baton.suspended" {
			suspended++
		}
	}
	if suspended != 1 {
		t.Errorf("hold span events %+v, want one baton.suspended", hold.Events)
	}
	if acq.ParentID != job.SpanID || hold.ParentID != job.SpanID {
		t.Errorf("acquire's parent %s, hold's %s, want the job span %s", acq.ParentID, hold.ParentID, job.SpanID)
	}
	var stale []eventJSON
	for _, e := range job.Events {
		if e.Name == "baton.stale_rejected" {
			stale = append(stale, e)
		}
	}
	if len(stale) != 1 {
		t.Fatalf("job span events %+v, want one baton.stale_rejected", job.Events)
	}
	want := map[string]string{"baton.token": tok, "baton.stored_token": strconv.FormatUint(storedToken, 10),
		"baton.resource": name, "baton.lock.name": name, "baton.owner": hold.Attrs["baton.owner"]}
	for k, v := range want {
		if stale[0].Attrs[k] != v {
			t.Errorf("stale rejection %s = %q, want %q", k, stale[0].Attrs[k], v)
		}
	}
}

func checkChildSums(t *testing.T, sums []pointJSON) {
	t.Helper()
	get := func(name string, match func(map[string]string) bool) int64 {
		var found []pointJSON
		for _, p := range sums {
			if p.Name == name && match(p.Attrs) {
				found = append(found, p)
			}
		}
		if len(found) != 1 {
			t.Fatalf("holder's %s: %d points match, want 1 (%+v)", name, len(found), sums)
		}
		return found[0].Value
	}
	zk := func(a map[string]string) bool { return a["baton.engine"] == "zk" && a["baton.recipe"] == "mutex" }
	for _, c := range []struct {
		name  string
		match func(map[string]string) bool
		want  int64
	}{
		{"baton.suspensions", zk, 1},
		{"baton.losses", zk, 1},
		{"baton.acquires", func(a map[string]string) bool { return zk(a) && a["baton.result"] == "granted" }, 1},
		{"baton.stale_rejections", func(a map[string]string) bool { return a["baton.engine"] == "fence" }, 1},
		{"baton.leases.held", zk, 0},
		{"baton.leases.suspended", zk, 0},
		{"baton.acquires.waiting", zk, 0},
	} {
		if got := get(c.name, c.match); got != c.want {
			t.Errorf("holder's %s = %d, want %d", c.name, got, c.want)
		}
	}
}
