package batonprom

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/obsview"
)

// DefaultMaxTracked is the default bound on the acquires and leases the
// Collector tracks at once for its gauges; see Options.MaxTracked.
const DefaultMaxTracked = obsview.DefaultMaxTracked

// Options configures a Collector. The zero value is the documented
// defaults.
type Options struct {
	// LockNames adds a "name" label (the lock name, or the lock name a
	// fenced write gave) to the per-lock metrics. Off by default: every
	// distinct name becomes a series of every such metric, kept until the
	// process exits, so a program that locks per tenant, order or payment
	// would grow without bound. Turn it on only for a small, fixed set of
	// names. Wrap the Collector with baton.HashNames to carry a keyed
	// pseudonym instead of the name itself.
	LockNames bool
	// WaitBuckets are the bucket bounds, in seconds, of the acquire wait
	// and lost-lead histograms; nil means DefaultWaitBuckets.
	WaitBuckets []float64
	// HoldBuckets are those of the hold histogram; nil means
	// DefaultHoldBuckets.
	HoldBuckets []float64
	// MaxTracked bounds the acquires and leases tracked at once for the
	// gauges; 0 means DefaultMaxTracked. Beyond it new acquires are still
	// counted but leave the gauges alone, which then read low.
	MaxTracked int
	// ConstLabels are added to every metric (for example a shard).
	ConstLabels prometheus.Labels
	// Engines are the engines (Event.Engine: "zk", "etcd", "redis",
	// "redlock", "postgres", "mysql", "sqlite", "mem") whose events this
	// Collector will see. Their counters and gauges are exposed at 0 from
	// the start, for every recipe and every result, cause and renewal
	// result, so that increase() and rate() see their first event; a
	// series that first appears at 1 has no earlier sample to rise from.
	// nil means none: an engine's series then appear at their first
	// event. With LockNames the per-lock series cannot be known in
	// advance and appear at their first event either way.
	//
	// Whatever Engines holds, the series whose labels are fixed are
	// exposed at 0 from the start: stale rejections (engine "fence"; with
	// LockNames, per name at its first rejection), and idempotency and
	// task events for every outcome.
	Engines []string
}

var (
	// DefaultWaitBuckets suit lock waits: an uncontended grant takes a
	// round trip (about 1ms), a contended one up to a holder's work, and a
	// wait past a minute is an outage of its own.
	DefaultWaitBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}
	// DefaultHoldBuckets suit holding times from a short critical section
	// (10ms) to a leader's term (an hour and more).
	DefaultHoldBuckets = []float64{0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 600, 1800, 3600}
	// renewalBuckets suit one renewal round trip.
	renewalBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}
	// batchBuckets suit the number of leases one renewal carries.
	batchBuckets = []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000}
)

// Collector turns baton's events into Prometheus metrics. It is a
// baton.Observer (pass it as the Observer of engines, fence, idem and
// tasks) and a prometheus.Collector (register it once). Its methods are
// safe for concurrent use; Observe takes one short mutex for the gauges
// and otherwise only the client library's atomic updates.
type Collector struct {
	names bool
	all   []prometheus.Collector
	track *obsview.Tracker[liveKey]

	acquires, retries, suspensions, losses, releaseFails *prometheus.CounterVec
	renewals, stale, recovered, idem, tasks              *prometheus.CounterVec
	wait, hold, suspension, lead, renewalTime, batch     *prometheus.HistogramVec
	live                                                 [obsview.Gauges]*prometheus.GaugeVec
}

// liveKey is the label set of the gauges.
type liveKey struct{ engine, recipe, name string }

var (
	_ baton.Observer       = (*Collector)(nil)
	_ prometheus.Collector = (*Collector)(nil)
)

// New returns a Collector. Register it with a prometheus.Registerer:
//
//	c := batonprom.New(batonprom.Options{})
//	prometheus.MustRegister(c)
func New(opts Options) *Collector {
	c := &Collector{names: opts.LockNames}
	wb, hb := opts.WaitBuckets, opts.HoldBuckets
	if wb == nil {
		wb = DefaultWaitBuckets
	}
	if hb == nil {
		hb = DefaultHoldBuckets
	}
	lock := c.labels()
	staleLabels := []string{"engine"} // a fenced write may name its lock
	if c.names {
		staleLabels = append(staleLabels, "name")
	}
	cl := opts.ConstLabels

	c.acquires = c.counter(cl, "acquires_total", "Acquires that ended, by result (granted, not_acquired, timeout, cancelled, unavailable, session_lost, …).", c.labels("result")...)
	c.retries = c.counter(cl, "acquire_retries_total", "Acquire attempts that did not grant and waited or retried.", lock...)
	c.suspensions = c.counter(cl, "suspensions_total", "Held leases whose ownership came into doubt (Suspended).", lock...)
	c.losses = c.counter(cl, "losses_total", "Leases lost, by cause (deadline, gone, expired, session_expired, closed, other).", c.labels("cause")...)
	c.releaseFails = c.counter(cl, "release_failures_total", "Releases that did not reach the server; the lease stays held.", lock...)
	c.renewals = c.counter(cl, "renewals_total", "Keeper renewal round trips, by result (ok, late, error).", "engine", "result")
	c.stale = c.counter(cl, "stale_rejections_total", "Writes a fenced resource refused as stale: a paused or partitioned former holder wrote.", staleLabels...)
	c.recovered = c.counter(cl, "recovered_creates_total", "Creates with an unknown outcome whose entry an acquire found and kept or removed.", "engine")
	c.idem = c.counter(cl, "idempotency_total", "Idempotency key state changes and look-ups, by outcome.", "outcome")
	c.tasks = c.counter(cl, "tasks_total", "Durable task claims, takeovers, checkpoints and completions, by outcome.", "outcome")

	c.wait = c.histogram(cl, "acquire_wait_seconds", "Time from an acquire's start to its grant or failure.", wb, c.labels("result")...)
	c.hold = c.histogram(cl, "hold_seconds", "Time from a grant to its release or loss, by end (released, lost).", hb, c.labels("end")...)
	c.suspension = c.histogram(cl, "suspension_seconds", "How long suspended leases stayed suspended before they were held again.", wb, lock...)
	c.lead = c.histogram(cl, "lost_lead_seconds", "For lease engines: how long before the server could expire a grant its loss was declared. Shrinking means renewals come too late.", wb, lock...)
	c.renewalTime = c.histogram(cl, "renewal_seconds", "Round-trip time of one keeper renewal batch.", renewalBuckets, "engine")
	c.batch = c.histogram(cl, "renewal_batch_size", "Leases carried by one keeper renewal batch.", batchBuckets, "engine")

	c.live[obsview.Waiting] = c.gauge(cl, "acquires_waiting", "Acquires started and not yet granted or failed.", lock...)
	c.live[obsview.Held] = c.gauge(cl, "leases_held", "Leases granted and not yet released or lost (suspended ones included).", lock...)
	c.live[obsview.Suspended] = c.gauge(cl, "leases_suspended", "Held leases whose ownership is in doubt.", lock...)
	c.zero(opts.Engines)
	c.track = obsview.NewTracker(opts.MaxTracked, func(k liveKey, g obsview.Gauge, d int) {
		v := c.lockValues(k.engine, k.recipe, k.name)
		for _, other := range c.live {
			other.WithLabelValues(v...) // all three show, at 0 until they move
		}
		c.live[g].WithLabelValues(v...).Add(float64(d))
	})
	return c
}

// zero creates at 0 every counter and gauge series whose labels are known
// before any event (see Options.Engines), as client_golang advises: a
// series that first appears at 1 is missed by increase() and rate().
func (c *Collector) zero(engines []string) {
	for _, o := range obsview.IdemOutcomes {
		c.idem.WithLabelValues(o)
	}
	for _, o := range obsview.TaskOutcomes {
		c.tasks.WithLabelValues(o)
	}
	for _, e := range engines {
		if obsview.Renews(e) {
			for _, r := range obsview.RenewalResults {
				c.renewals.WithLabelValues(e, r)
			}
		}
		if obsview.Recovers(e) {
			c.recovered.WithLabelValues(e)
		}
	}
	if c.names {
		return // the name label's values are not known in advance
	}
	c.stale.WithLabelValues("fence")
	for _, e := range engines {
		for _, r := range obsview.Recipes {
			for _, v := range obsview.Results {
				c.acquires.WithLabelValues(e, r, v)
			}
			for _, v := range obsview.Causes {
				c.losses.WithLabelValues(e, r, v)
			}
			for _, m := range []*prometheus.CounterVec{c.retries, c.suspensions, c.releaseFails} {
				m.WithLabelValues(e, r)
			}
			for _, g := range c.live {
				g.WithLabelValues(e, r)
			}
		}
	}
}

// labels returns the per-lock label names (engine, recipe, and name when
// LockNames is on) followed by extra, in the order lockValues fills.
func (c *Collector) labels(extra ...string) []string {
	names := []string{"engine", "recipe"}
	if c.names {
		names = append(names, "name")
	}
	return append(names, extra...)
}

// lockValues returns values in the order labels gives names, extra last.
func (c *Collector) lockValues(engine, recipe, name string, extra ...string) []string {
	v := []string{engine, recipe}
	if c.names {
		v = append(v, name)
	}
	return append(v, extra...)
}

func (c *Collector) counter(cl prometheus.Labels, name, help string, labels ...string) *prometheus.CounterVec {
	v := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "baton", Name: name, Help: help, ConstLabels: cl}, labels)
	c.all = append(c.all, v)
	return v
}

func (c *Collector) histogram(cl prometheus.Labels, name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	v := prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "baton", Name: name, Help: help, ConstLabels: cl, Buckets: buckets}, labels)
	c.all = append(c.all, v)
	return v
}

func (c *Collector) gauge(cl prometheus.Labels, name, help string, labels ...string) *prometheus.GaugeVec {
	v := prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "baton", Name: name, Help: help, ConstLabels: cl}, labels)
	c.all = append(c.all, v)
	return v
}

// Describe sends the descriptors of all of baton's metrics.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, m := range c.all {
		m.Describe(ch)
	}
}

// Collect sends the current value of every series.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	for _, m := range c.all {
		m.Collect(ch)
	}
}

// Tracking returns how many acquires and leases the gauges track now. A
// number that grows while the gauges stay flat means events go missing
// (an engine that emits no end for some acquires).
func (c *Collector) Tracking() int { return c.track.Tracking() }

// Observe records e. It never blocks on anything but its own short mutex.
func (c *Collector) Observe(_ context.Context, e baton.Event) {
	lock := func(extra ...string) []string { return c.lockValues(e.Engine, e.Recipe, e.Name, extra...) }
	c.track.Observe(e, liveKey{e.Engine, e.Recipe, c.nameOf(e)})
	switch e.Kind {
	case baton.EventAcquireRetry:
		c.retries.WithLabelValues(lock()...).Inc()
	case baton.EventGranted, baton.EventAcquireFailed:
		r := obsview.Result(e.Err)
		c.acquires.WithLabelValues(lock(r)...).Inc()
		c.wait.WithLabelValues(lock(r)...).Observe(e.Wait.Seconds())
	case baton.EventSuspended:
		c.suspensions.WithLabelValues(lock()...).Inc()
	case baton.EventResumed:
		c.suspension.WithLabelValues(lock()...).Observe(e.Duration.Seconds())
	case baton.EventLost:
		c.losses.WithLabelValues(lock(obsview.Cause(e.Err))...).Inc()
		c.hold.WithLabelValues(lock("lost")...).Observe(e.Hold.Seconds())
		if e.Lead > 0 { // 0: the engine cannot tell
			c.lead.WithLabelValues(lock()...).Observe(e.Lead.Seconds())
		}
	case baton.EventReleased:
		c.hold.WithLabelValues(lock("released")...).Observe(e.Hold.Seconds())
	case baton.EventReleaseFailed:
		c.releaseFails.WithLabelValues(lock()...).Inc()
	case baton.EventRenewal:
		c.renewals.WithLabelValues(e.Engine, obsview.Renewal(e)).Inc()
		c.renewalTime.WithLabelValues(e.Engine).Observe(e.Duration.Seconds())
		c.batch.WithLabelValues(e.Engine).Observe(float64(e.Count))
	case baton.EventStaleRejected:
		v := []string{e.Engine}
		if c.names {
			v = append(v, e.Name)
		}
		c.stale.WithLabelValues(v...).Inc()
	case baton.EventRecovered:
		c.recovered.WithLabelValues(e.Engine).Inc()
	case baton.EventIdempotency:
		c.idem.WithLabelValues(obsview.IdemOutcome(e.Outcome)).Inc()
	case baton.EventTask:
		c.tasks.WithLabelValues(obsview.TaskOutcome(e.Outcome)).Inc()
	}
}

func (c *Collector) nameOf(e baton.Event) string {
	if c.names {
		return e.Name
	}
	return ""
}
