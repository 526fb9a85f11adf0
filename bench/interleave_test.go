package bench_test

import (
	"fmt"
	"strings"
	"testing"
)

// interleaved times each pair's lock+unlock with testing.Benchmark in
// rounds, rotating the order every round, and returns the per-round ns/op
// and allocations per op by impl. Ratios between two impls are then taken
// round by round (ratio), so a slow second of the machine or the server
// weighs on both sides.
func interleaved(t *testing.T, label string, pairs []*pair, rounds int) map[string]*uncontended {
	t.Helper()
	res := make(map[string]*uncontended, len(pairs))
	for _, p := range pairs {
		res[p.impl] = &uncontended{}
	}
	eachRound(t, label, pairs, rounds, func(p *pair, br testing.BenchmarkResult) {
		res[p.impl].add(br)
	})
	return res
}

// eachRound runs each pair's lock+unlock with testing.Benchmark in rounds,
// rotating the order every round, and hands every result to record.
func eachRound(t *testing.T, label string, pairs []*pair, rounds int, record func(*pair, testing.BenchmarkResult)) {
	t.Helper()
	for round := range rounds {
		for k := range pairs {
			p := pairs[(k+round)%len(pairs)]
			var err error
			br := testing.Benchmark(func(b *testing.B) { err = loop(b, p) })
			if err != nil || br.N == 0 {
				t.Fatalf("%s %s: lock+unlock = %v (N=%d)", label, p.what, err, br.N)
			}
			record(p, br)
		}
	}
}

// countFlights fills in reqOp for each pair from its counted twin (same
// impl) run k times through turns. Without a proxy (SQLite, in-process)
// there is nothing to count: it reports false.
func countFlights(t *testing.T, label string, res map[string]*uncontended, counted []*pair, turns *turnProxy, k int) bool {
	t.Helper()
	if turns == nil {
		return false
	}
	r := &rig{requests: func() (int64, error) { return turns.Turns(), nil }}
	for _, p := range counted {
		per, _, err := requestsPerOp(r, p, k)
		if err != nil {
			t.Fatalf("%s %s: counting round trips: %v", label, p.what, err)
		}
		res[p.impl].reqOp = per
	}
	return true
}

// flights formats request counts joined by "·", or "n/a" when the engine
// has no wire to count on.
func flights(ok bool, res map[string]*uncontended, impls ...string) string {
	if !ok {
		return "n/a"
	}
	parts := make([]string, 0, len(impls))
	for _, impl := range impls {
		if u := res[impl]; u != nil {
			parts = append(parts, fmt.Sprintf("%.2f", u.reqOp))
		} else {
			parts = append(parts, "–")
		}
	}
	return strings.Join(parts, "·")
}

// micros is an impl's median µs/op, or "–" when it was not measured.
func micros(res map[string]*uncontended, impl string) string {
	u := res[impl]
	if u == nil {
		return "–"
	}
	return fmt.Sprintf("%.0f", u.median()/1e3)
}

// ratioOf is the median per-round ratio a/b, or "–" when either is missing.
func ratioOf(res map[string]*uncontended, a, b string) string {
	ua, ub := res[a], res[b]
	if ua == nil || ub == nil {
		return "–"
	}
	return fmt.Sprintf("%.3f", ratio(ua, ub))
}

// spreads lists each impl's range over rounds and its allocations, for
// the notes.
func spreads(label string, pairs []*pair, res map[string]*uncontended) []string {
	var out []string
	for _, p := range pairs {
		u := res[p.impl]
		out = append(out, fmt.Sprintf("%s %s = %s: rounds %s µs/op, %s", label, p.impl, p.what, u.spread(), u.allocSpread()))
	}
	return out
}

// benchPairs runs each pair's lock+unlock as a sub-benchmark (plain Go
// benchmarks; the ratio report is TestRatios).
func benchPairs(b *testing.B, pairs []*pair) {
	for _, p := range pairs {
		b.Run(p.impl, func(b *testing.B) {
			if err := loop(b, p); err != nil {
				b.Fatal(err)
			}
		})
	}
}

// BenchmarkSQL times the SQL lock pairs and fenced writes on each database.
func BenchmarkSQL(b *testing.B) {
	for _, be := range sqlBackends(b.TempDir()) {
		b.Run(be.name+"/lock", func(b *testing.B) { benchPairs(b, newSQLRig(b, be).pairs) })
		b.Run(be.name+"/write", func(b *testing.B) { benchPairs(b, newFenceRig(b, be).pairs) })
	}
}

// BenchmarkRedis times redislock, bsm/redislock and 2×PING.
func BenchmarkRedis(b *testing.B) { benchPairs(b, newRedisRig(b).pairs) }

// BenchmarkRedlock times redlock, go-redsync and two PING rounds.
func BenchmarkRedlock(b *testing.B) { benchPairs(b, newRedlockRig(b).pairs) }
