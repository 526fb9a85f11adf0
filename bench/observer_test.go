package bench_test

import (
	"fmt"
	"io"
	"log/slog"
	"math"
	"strings"
	"testing"
	"text/tabwriter"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/batonslog"
	batonprom "github.com/baton-go/baton/prom"
	"github.com/baton-go/baton/redislock"
)

// observerRig is redislock's mutex three times on one client, differing
// only in Options.Observer: nil, batonslog at its default level into
// io.Discard, and a batonprom Collector on a fresh registry. "none" is the
// Redis row's own baton pair (redisPairs, whose Options never name an
// Observer), the allocation count the nil row must match.
type observerRig struct {
	pairs []*pair // impls "none", "nil", "slog", "prom"
	reg   *prometheus.Registry
}

func newObserverRig(tb testing.TB) *observerRig {
	tb.Helper()
	rdb, _, _ := newRedisClient(tb, redisAddr(tb), false)
	reg := prometheus.NewRegistry()
	col := batonprom.New(batonprom.Options{})
	reg.MustRegister(col)
	none := redisPairs(tb, rdb)[0]
	none.impl = "none"
	r := &observerRig{reg: reg, pairs: []*pair{none}}
	for _, o := range []struct {
		impl string
		obs  baton.Observer
	}{
		{"nil", nil},
		{"slog", batonslog.New(slog.NewTextHandler(io.Discard, nil), batonslog.Options{})},
		{"prom", col},
	} {
		r.pairs = append(r.pairs, observedPair(tb, rdb, o.impl, o.obs))
	}
	return r
}

// observedPair is redislock's mutex lock+unlock on a client of its own
// whose Options.Observer is obs.
func observedPair(tb testing.TB, rdb *redis.Client, impl string, obs baton.Observer) *pair {
	tb.Helper()
	prefix := redisPrefix(tb, rdb, "obs-"+impl)
	c, err := redislock.New(rdb, redislock.Options{TTL: benchRedisTTL, Prefix: prefix, Observer: obs})
	if err != nil {
		tb.Fatalf("redislock.New(Observer %s) = %v", impl, err)
	}
	tb.Cleanup(func() { _ = c.Close() })
	m, err := c.Mutex("baton")
	if err != nil {
		tb.Fatalf("Mutex = %v", err)
	}
	p := batonPair(m, "redislock Mutex, Observer "+impl, redisEntries(c, "baton"))
	p.impl = impl
	return p
}

// TestObserverSmoke checks that every observed mutex locks and unlocks on
// the server, and that the Collector really is the engine's observer: its
// acquire counter grows with the smoke's locks.
func TestObserverSmoke(t *testing.T) {
	r := newObserverRig(t)
	smokeRig(t, &rig{pairs: r.pairs})
	if n := gathered(t, r.reg, "baton_acquires_total"); n < 2 {
		t.Errorf("baton_acquires_total after two locks = %v, want ≥ 2", n)
	}
}

// gathered sums the samples of the counter or gauge family name.
func gathered(t *testing.T, g prometheus.Gatherer, name string) float64 {
	t.Helper()
	fams, err := g.Gather()
	if err != nil {
		t.Fatalf("Gather = %v", err)
	}
	var sum float64
	for _, mf := range fams {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			sum += m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	return sum
}

// observerReport prints the observer's cost on redislock's uncontended
// mutex: nil (the baseline), batonslog at its default level into
// io.Discard, and a registered batonprom Collector. Targets: nil allocates
// what the engine allocates without an observer (the same code path);
// slog and prom within 1.10× nil's time.
func observerReport(t *testing.T, rounds int) (misses []string) {
	r := newObserverRig(t)
	res := interleaved(t, "observer", r.pairs, rounds)
	base := res["nil"]
	var tw strings.Builder
	w := tabwriter.NewWriter(&tw, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "observer\tµs/op\tallocs/op\t/nil\ttarget\tresult\t")
	none, nilA := res["none"].medianAllocs(), res["nil"].medianAllocs()
	fmt.Fprintf(w, "none (redis row)\t%.0f\t%.1f\t%.3f\t\t\t\n", res["none"].median()/1e3, none, ratio(res["none"], base))
	verdict := "PASS"
	// The counts are the whole process's, so background work (pings)
	// moves each by a fraction; an observer call that allocated would add
	// at least one whole allocation per op.
	if math.Abs(nilA-none) >= 0.75 {
		verdict = "MISS"
		misses = append(misses, fmt.Sprintf("observer nil allocs %.1f/op vs %.1f without", nilA, none))
	}
	fmt.Fprintf(w, "nil\t%.0f\t%.1f\t\tallocs = none\t%s\t\n", base.median()/1e3, nilA, verdict)
	for _, impl := range []string{"slog", "prom"} {
		o := res[impl]
		rt := ratio(o, base)
		verdict := "PASS"
		if rt > 1.10 {
			verdict = "MISS"
			misses = append(misses, fmt.Sprintf("observer %s %.3f× nil", impl, rt))
		}
		fmt.Fprintf(w, "%s\t%.0f\t%.1f\t%.3f\t≤1.10×nil\t%s\t\n", impl, o.median()/1e3, o.medianAllocs(), rt, verdict)
	}
	w.Flush()
	var notes []string
	for _, p := range r.pairs {
		o := res[p.impl]
		notes = append(notes, fmt.Sprintf("%s = %s: rounds %s µs/op, %s", p.impl, p.what, o.spread(), o.allocSpread()))
	}
	report(t, "observer", "observer cost on redislock's uncontended mutex lock+unlock, %d interleaved rounds (/nil: median of per-round time ratios; allocs/op: median over rounds, the whole process's mallocs):\n%s\n%s",
		rounds, tw.String(), strings.Join(notes, "\n"))
	return misses
}
