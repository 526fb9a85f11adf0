package batonotel

import (
	"context"
	"sync"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/obsview"
)

// ScopeName is the instrumentation scope of the tracer and meter.
const ScopeName = "github.com/baton-go/baton/otel"

// DefaultMaxTracked is the default bound on the acquires and leases the
// Observer tracks at once for its gauges and spans; see
// Options.MaxTracked.
const DefaultMaxTracked = obsview.DefaultMaxTracked

// Options configures an Observer. The zero value is the documented
// defaults.
type Options struct {
	// TracerProvider makes the spans; nil means otel.GetTracerProvider().
	TracerProvider trace.TracerProvider
	// MeterProvider makes the metrics; nil means otel.GetMeterProvider().
	MeterProvider metric.MeterProvider
	// LockNames adds the baton.lock.name attribute to the per-lock
	// metrics. Off by default: every distinct name becomes a series of
	// every such metric for the life of the process. Spans always carry
	// the name; wrap the Observer with baton.HashNames to carry a keyed
	// pseudonym instead.
	LockNames bool
	// MaxTracked bounds the acquires and leases tracked at once, for the
	// gauges and for the open spans each; 0 means DefaultMaxTracked.
	// Beyond it new acquires are still counted but leave the gauges
	// alone and get no acquire span; their lease's hold span starts,
	// backdated to the grant, at its first event that finds room.
	MaxTracked int
}

// Observer turns baton's events into OpenTelemetry spans and metrics. Pass
// it as the Observer of engines, fence, idem and tasks. Its methods are
// safe for concurrent use.
type Observer struct {
	tracer trace.Tracer
	in     *instruments
	names  bool
	track  *obsview.Tracker[liveKey]
	// liveSets caches the up-down counters' attributes; track's mutex
	// guards it.
	liveSets map[liveKey]metric.MeasurementOption

	mu    sync.Mutex // guards spans
	spans *spanTable
}

var _ baton.Observer = (*Observer)(nil)

// New returns an Observer. It fails only when the MeterProvider refuses
// an instrument.
func New(opts Options) (*Observer, error) {
	tp, mp := opts.TracerProvider, opts.MeterProvider
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	in, err := newInstruments(mp.Meter(ScopeName))
	if err != nil {
		return nil, err
	}
	o := &Observer{
		tracer:   tp.Tracer(ScopeName),
		in:       in,
		names:    opts.LockNames,
		liveSets: make(map[liveKey]metric.MeasurementOption),
		spans:    newSpanTable(opts.MaxTracked),
	}
	o.track = obsview.NewTracker(opts.MaxTracked, o.applyLive)
	return o, nil
}

// Observe records e as span changes and metrics. ctx is the acquire's
// context for acquire events (the acquire span's parent), the lease's for
// lease events (it carries the acquire's caller span on), and the
// caller's for resource events (a stale rejection becomes an event on
// that span).
func (o *Observer) Observe(ctx context.Context, e baton.Event) {
	stamp(&e)
	name := ""
	if o.names {
		name = e.Name
	}
	o.track.Observe(e, liveKey{e.Engine, e.Recipe, name})
	o.record(ctx, e)
	o.trace(ctx, e)
	onCaller(ctx, e)
}

// Tracking returns how many acquires and leases have open spans. A number
// that only grows means some acquires or leases never report their end.
func (o *Observer) Tracking() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.spans.open)
}
