package batonotel_test

import (
	"context"
	"math"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/baton-go/baton"
	batonotel "github.com/baton-go/baton/otel"
)

// rig is an Observer on in-memory SDK providers: spans are exported as
// they end, metrics are read on demand.
type rig struct {
	t      *testing.T
	o      *batonotel.Observer
	spans  *tracetest.InMemoryExporter
	reader *sdkmetric.ManualReader
	tracer trace.Tracer
}

func newRig(t *testing.T, opts batonotel.Options) *rig {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() {
		_ = tp.Shutdown(context.Background())
		_ = mp.Shutdown(context.Background())
	})
	opts.TracerProvider, opts.MeterProvider = tp, mp
	o, err := batonotel.New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return &rig{t: t, o: o, spans: exp, reader: reader, tracer: tp.Tracer("test")}
}

func (r *rig) observe(ctx context.Context, es ...baton.Event) {
	for _, e := range es {
		r.o.Observe(ctx, e)
	}
}

// metrics is one collection of the reader.
type metrics struct {
	t  *testing.T
	rm metricdata.ResourceMetrics
}

func (r *rig) collect() metrics {
	r.t.Helper()
	m := metrics{t: r.t}
	if err := r.reader.Collect(context.Background(), &m.rm); err != nil {
		r.t.Fatalf("Collect: %v", err)
	}
	return m
}

func (m metrics) find(name string) metricdata.Aggregation {
	for _, sm := range m.rm.ScopeMetrics {
		for _, mt := range sm.Metrics {
			if mt.Name == name {
				return mt.Data
			}
		}
	}
	return nil
}

// sum returns the value of a counter or up-down counter for exactly attrs.
func (m metrics) sum(name string, attrs ...attribute.KeyValue) int64 {
	m.t.Helper()
	s, ok := m.find(name).(metricdata.Sum[int64])
	if !ok {
		m.t.Fatalf("%s: no int64 sum", name)
	}
	want := attribute.NewSet(attrs...)
	for _, dp := range s.DataPoints {
		if dp.Attributes.Equals(&want) {
			return dp.Value
		}
	}
	m.t.Fatalf("%s: no point with %v", name, want.Encoded(attribute.DefaultEncoder()))
	return 0
}

// hist returns a histogram's count and sum for exactly attrs.
func (m metrics) hist(name string, attrs ...attribute.KeyValue) (uint64, float64) {
	m.t.Helper()
	h, ok := m.find(name).(metricdata.Histogram[float64])
	if !ok {
		m.t.Fatalf("%s: no float64 histogram", name)
	}
	want := attribute.NewSet(attrs...)
	for _, dp := range h.DataPoints {
		if dp.Attributes.Equals(&want) {
			return dp.Count, dp.Sum
		}
	}
	m.t.Fatalf("%s: no point with %v", name, want.Encoded(attribute.DefaultEncoder()))
	return 0, 0
}

// gauges checks the three up-down counters of one attribute set.
func (m metrics) gauges(when string, waiting, held, suspended int64, attrs ...attribute.KeyValue) {
	m.t.Helper()
	for _, g := range []struct {
		name string
		want int64
	}{{"baton.acquires.waiting", waiting}, {"baton.leases.held", held}, {"baton.leases.suspended", suspended}} {
		if got := m.sum(g.name, attrs...); got != g.want {
			m.t.Errorf("%s: %s = %d, want %d", when, g.name, got, g.want)
		}
	}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// attr returns a span's attribute value.
func attr(kv []attribute.KeyValue, key string) (attribute.Value, bool) {
	for _, a := range kv {
		if string(a.Key) == key {
			return a.Value, true
		}
	}
	return attribute.Value{}, false
}

// byAcquire finds the span with name and baton.acquire.id id.
func byAcquire(t *testing.T, spans tracetest.SpanStubs, name string, id uint64) tracetest.SpanStub {
	t.Helper()
	var found []tracetest.SpanStub
	for _, s := range spans {
		if v, ok := attr(s.Attributes, "baton.acquire.id"); s.Name == name && ok && v.AsInt64() == int64(id) {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d %s spans for acquire %d, want 1", len(found), name, id)
	}
	return found[0]
}

func hasEvent(s tracetest.SpanStub, name string) (sdktrace.Event, bool) {
	for _, e := range s.Events {
		if e.Name == name {
			return e, true
		}
	}
	return sdktrace.Event{}, false
}
