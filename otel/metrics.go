package batonotel

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/obsview"
)

var (
	// DefaultWaitBuckets suit lock waits: an uncontended grant takes a
	// round trip (about 1ms), a contended one up to a holder's work, and a
	// wait past a minute is an outage of its own.
	DefaultWaitBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}
	// DefaultHoldBuckets suit holding times from a short critical section
	// (10ms) to a leader's term (an hour and more).
	DefaultHoldBuckets = []float64{0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 600, 1800, 3600}
	renewalBuckets     = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}
	batchBuckets       = []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000}
)

// instruments are the metrics, named so that an OpenTelemetry-to-Prometheus
// exporter yields the names package batonprom uses (baton.acquire.wait in
// "s" becomes baton_acquire_wait_seconds).
type instruments struct {
	acquires, retries, suspensions, losses, releaseFails metric.Int64Counter
	renewals, stale, recovered, idem, tasks              metric.Int64Counter
	wait, hold, suspension, lead, renewalTime, batch     metric.Float64Histogram
	live                                                 [obsview.Gauges]metric.Int64UpDownCounter
}

func newInstruments(m metric.Meter) (*instruments, error) {
	var in instruments
	var errs []error
	counter := func(name, unit, desc string) metric.Int64Counter {
		c, err := m.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errs = append(errs, err)
		return c
	}
	hist := func(name, unit, desc string, b []float64) metric.Float64Histogram {
		h, err := m.Float64Histogram(name, metric.WithUnit(unit), metric.WithDescription(desc), metric.WithExplicitBucketBoundaries(b...))
		errs = append(errs, err)
		return h
	}
	updown := func(name, unit, desc string) metric.Int64UpDownCounter {
		c, err := m.Int64UpDownCounter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errs = append(errs, err)
		return c
	}
	in.acquires = counter("baton.acquires", "{acquire}", "Acquires that ended, by baton.result.")
	in.retries = counter("baton.acquire.retries", "{attempt}", "Acquire attempts that did not grant and waited or retried.")
	in.suspensions = counter("baton.suspensions", "{suspension}", "Held leases whose ownership came into doubt.")
	in.losses = counter("baton.losses", "{lease}", "Leases lost, by baton.lost.cause.")
	in.releaseFails = counter("baton.release_failures", "{release}", "Releases that did not reach the server; the lease stays held.")
	in.renewals = counter("baton.renewals", "{round_trip}", "Keeper renewal round trips, by baton.result (ok, late, error).")
	in.stale = counter("baton.stale_rejections", "{write}", "Writes a fenced resource refused as stale.")
	in.recovered = counter("baton.recovered_creates", "{create}", "Creates with an unknown outcome an acquire found and resolved.")
	in.idem = counter("baton.idempotency", "{event}", "Idempotency key state changes and look-ups, by baton.outcome.")
	in.tasks = counter("baton.tasks", "{event}", "Durable task claims, takeovers, checkpoints and completions, by baton.outcome.")
	in.wait = hist("baton.acquire.wait", "s", "Time from an acquire's start to its grant or failure.", DefaultWaitBuckets)
	in.hold = hist("baton.hold", "s", "Time from a grant to its release or loss, by baton.hold.end.", DefaultHoldBuckets)
	in.suspension = hist("baton.suspension", "s", "How long suspended leases stayed suspended before they were held again.", DefaultWaitBuckets)
	in.lead = hist("baton.lost_lead", "s", "How long before the server could expire a grant its loss was declared.", DefaultWaitBuckets)
	in.renewalTime = hist("baton.renewal", "s", "Round-trip time of one keeper renewal batch.", renewalBuckets)
	in.batch = hist("baton.renewal.batch_size", "{lease}", "Leases carried by one keeper renewal batch.", batchBuckets)
	in.live[obsview.Waiting] = updown("baton.acquires.waiting", "{acquire}", "Acquires started and not yet granted or failed.")
	in.live[obsview.Held] = updown("baton.leases.held", "{lease}", "Leases granted and not yet released or lost.")
	in.live[obsview.Suspended] = updown("baton.leases.suspended", "{lease}", "Held leases whose ownership is in doubt.")
	return &in, errors.Join(errs...)
}

// record updates the metrics for e. Metric updates never block; ctx is
// passed on for exemplars.
func (o *Observer) record(ctx context.Context, e baton.Event) {
	in := o.in
	lock := func(extra ...attribute.KeyValue) metric.MeasurementOption {
		kv := append([]attribute.KeyValue{keyEngine.String(e.Engine), keyRecipe.String(e.Recipe)}, extra...)
		if o.names {
			kv = append(kv, keyName.String(e.Name))
		}
		return metric.WithAttributes(kv...)
	}
	engine := metric.WithAttributes(keyEngine.String(e.Engine))
	switch e.Kind {
	case baton.EventAcquireRetry:
		in.retries.Add(ctx, 1, lock())
	case baton.EventGranted, baton.EventAcquireFailed:
		r := lock(keyResult.String(obsview.Result(e.Err)))
		in.acquires.Add(ctx, 1, r)
		in.wait.Record(ctx, e.Wait.Seconds(), r)
	case baton.EventSuspended:
		in.suspensions.Add(ctx, 1, lock())
	case baton.EventResumed:
		in.suspension.Record(ctx, e.Duration.Seconds(), lock())
	case baton.EventLost:
		in.losses.Add(ctx, 1, lock(keyCause.String(obsview.Cause(e.Err))))
		in.hold.Record(ctx, e.Hold.Seconds(), lock(keyEnd.String("lost")))
		if e.Lead > 0 { // 0: the engine cannot tell
			in.lead.Record(ctx, e.Lead.Seconds(), lock())
		}
	case baton.EventReleased:
		in.hold.Record(ctx, e.Hold.Seconds(), lock(keyEnd.String("released")))
	case baton.EventReleaseFailed:
		in.releaseFails.Add(ctx, 1, lock())
	case baton.EventRenewal:
		in.renewals.Add(ctx, 1, metric.WithAttributes(keyEngine.String(e.Engine), keyResult.String(obsview.Renewal(e))))
		in.renewalTime.Record(ctx, e.Duration.Seconds(), engine)
		in.batch.Record(ctx, float64(e.Count), engine)
	case baton.EventStaleRejected:
		kv := []attribute.KeyValue{keyEngine.String(e.Engine)}
		if o.names {
			kv = append(kv, keyName.String(e.Name))
		}
		in.stale.Add(ctx, 1, metric.WithAttributes(kv...))
	case baton.EventRecovered:
		in.recovered.Add(ctx, 1, engine)
	case baton.EventIdempotency:
		in.idem.Add(ctx, 1, metric.WithAttributes(keyOutcome.String(obsview.IdemOutcome(e.Outcome))))
	case baton.EventTask:
		in.tasks.Add(ctx, 1, metric.WithAttributes(keyOutcome.String(obsview.TaskOutcome(e.Outcome))))
	}
}

// liveKey is the attribute set of the gauges.
type liveKey struct{ engine, recipe, name string }

// applyLive moves one up-down counter. The tracker calls it under its
// mutex, which also guards o.liveSets: the attribute set of each label
// combination is built once, when its three counters are first shown at 0.
func (o *Observer) applyLive(k liveKey, g obsview.Gauge, d int) {
	set, ok := o.liveSets[k]
	if !ok {
		kv := []attribute.KeyValue{keyEngine.String(k.engine), keyRecipe.String(k.recipe)}
		if o.names {
			kv = append(kv, keyName.String(k.name))
		}
		set = metric.WithAttributeSet(attribute.NewSet(kv...))
		o.liveSets[k] = set
		for _, c := range o.in.live {
			c.Add(context.Background(), 0, set) // all three show, at 0 until they move
		}
	}
	o.in.live[g].Add(context.Background(), int64(d), set)
}
