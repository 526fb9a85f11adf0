package bench_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/baton-go/baton"
)

// curveSizes are the sizes the cost curves are drawn at, read from the
// environment: the waiter counts of the handoff curve (up to
// BATON_BENCH_MAX_WAITERS), the name counts of the throughput curve, the
// held leases of the held row (BATON_BENCH_HELD), the time each
// throughput point runs (BATON_BENCH_TPUT) and the rounds of its most
// names (BATON_BENCH_ROUNDS, BATON_BENCH_TPUT_ROUND).
type curveSizes struct {
	waiters []int
	names   []int
	clients int
	held    int
	tput    time.Duration
	// rounds and round: the interleaved rounds of the throughput's most
	// names, floor and peer (BATON_BENCH_ROUNDS) and the time each side
	// runs in a round (BATON_BENCH_TPUT_ROUND).
	rounds  int
	round   time.Duration
	handoff time.Duration // the time each handoff point runs
	rest    time.Duration // the at-rest window of the held row
}

// envInt reads a positive integer from the environment, else def.
func envInt(key string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(key)); err == nil && v > 0 {
		return v
	}
	return def
}

// envDuration reads a duration from the environment, else def.
func envDuration(key string, def time.Duration) time.Duration {
	if v, err := time.ParseDuration(os.Getenv(key)); err == nil && v > 0 {
		return v
	}
	return def
}

// sizesFor is the full sizes of the report (2 000 waiters, 10 000
// held leases) and small ones for the smoke.
func sizesFor(full bool) curveSizes {
	s := curveSizes{waiters: []int{5, 50, 500, 2000}, names: []int{1, 10, 100, 1000}, clients: 32}
	maxW, held := 3, 40
	s.tput, s.handoff, s.rest = 150*time.Millisecond, 300*time.Millisecond, 200*time.Millisecond
	s.rounds, s.round = 2, 50*time.Millisecond
	if full {
		maxW, held = 2000, 10000
		s.tput, s.handoff, s.rest = 3*time.Second, 3*time.Second, 6*time.Second
		s.rounds, s.round = 9, 500*time.Millisecond
	}
	s.rounds = envInt("BATON_BENCH_ROUNDS", s.rounds)
	s.round = envDuration("BATON_BENCH_TPUT_ROUND", s.round)
	maxW = envInt("BATON_BENCH_MAX_WAITERS", maxW)
	s.held = envInt("BATON_BENCH_HELD", held)
	s.tput = envDuration("BATON_BENCH_TPUT", s.tput)
	var ws []int
	for _, w := range s.waiters {
		if w <= maxW {
			ws = append(ws, w)
		}
	}
	if len(ws) == 0 || ws[len(ws)-1] != maxW && maxW < s.waiters[len(s.waiters)-1] {
		ws = append(ws, maxW) // the largest size asked for is always drawn
	}
	s.waiters = ws
	if !full {
		s.names, s.clients = []int{1, 4}, 4
	}
	return s
}

// handoffPoint is one point of a handoff curve.
type handoffPoint struct {
	waiters  int
	handoffs int
	p50, p99 time.Duration
	req      float64 // requests per handoff; NaN without a wire
	rest     float64 // requests per second at rest (holder holding, waiters waiting)
	allocs   float64 // the whole process's heap allocations per handoff
	// failed: a Lock or Release failed under the load (not a broken
	// handoff rule), so the point has no figures.
	failed error
}

// curveHandoffRig queues n waiters and a holder of one curve rig's engine
// on one name, each on a counted client of its own (the SQL engines: on
// up to maxClients clients, shared).
func curveHandoffRig(tb testing.TB, cr *curveRig, n int) *handoffRig {
	tb.Helper()
	r := &handoffRig{engine: cr.engine, unordered: !cr.ordered, requeue: 5 * time.Millisecond,
		requests: func() (int64, error) {
			if cr.requests == nil {
				return 0, nil
			}
			return cr.requests(), nil
		},
		sessionNote: fmt.Sprintf("%d %s clients", n+1, cr.engine)}
	ttl := benchRedisTTL // lease engines: no renewal falls into a point
	if cr.engine == "zk" {
		ttl = zkHandoffTimeout
	}
	name := benchName(fmt.Sprintf("%s-curve-%d", cr.engine, n))
	k := n + 1
	if cr.maxClients > 0 && k > cr.maxClients {
		k = cr.maxClients
		r.sessionNote = fmt.Sprintf("%d waiters and a holder on %d %s clients", n, k, cr.engine)
	}
	clients := make([]curveClient, k)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16) // dial 16 at a time
	for i := range clients {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			clients[i] = cr.client(tb, true, ttl, true)
		})
	}
	wg.Wait()
	tb.Cleanup(func() {
		cs := make([]closer, len(clients))
		for i, c := range clients {
			cs[i] = closer(c.close)
		}
		closeAll(cs)
	})
	for i := range n + 1 {
		m, err := clients[i%k].mutex(name)
		if err != nil {
			tb.Fatalf("Mutex(%q) = %v", name, err)
		}
		if cr.ordered {
			c, set := batonContender()
			set(m)
			r.contenders = append(r.contenders, c)
			continue
		}
		r.contenders = append(r.contenders, &contender{lock: func(ctx context.Context) (held, error) {
			l, err := m.Lock(ctx)
			if err != nil {
				return nil, err
			}
			return l, nil
		}})
	}
	return r
}

// closer adapts a close function to closeAll.
type closer func() error

func (c closer) Close() error { return c() }

// handoffCurve draws the handoff curve of every engine and of etcd's
// concurrency.Mutex, returning the points by engine.
func handoffCurve(t *testing.T, s curveSizes) (map[string][]handoffPoint, error) {
	out := make(map[string][]handoffPoint)
	engines := append(append([]string(nil), curveEngines[:2]...), append([]string{"etcd-peer"}, curveEngines[2:]...)...)
	for _, e := range engines {
		for _, n := range s.waiters {
			ok := t.Run(fmt.Sprintf("handoff/%s/%d", e, n), func(t *testing.T) {
				var r *handoffRig
				if e == "etcd-peer" {
					r = newEtcdPeerHandoffRig(t, n)
				} else {
					r = curveHandoffRig(t, newCurveRig(t, e), n)
				}
				res, err := runHandoff(r, handoffConfig{max: 500, budget: s.handoff, settle: time.Millisecond, rest: s.handoff})
				if err != nil && !errors.Is(err, errHandoffRule) {
					// A measured outcome, not a broken rule: the engine
					// could not serve this many waiters here (a Lock or a
					// Release failed: nodes too slow to answer, no attempt
					// answered within the lease time).
					t.Logf("%s handoff with %d waiters: an operation failed: %v", e, n, err)
					out[e] = append(out[e], handoffPoint{waiters: n, failed: err})
					return
				}
				if err != nil {
					t.Fatalf("%s handoff with %d waiters: %v", e, n, err)
				}
				pt := handoffPoint{waiters: n, handoffs: res.handoffs, p50: res.quantile(0.5), p99: res.quantile(0.99),
					req: res.perHandoff(), rest: res.restPerSec(), allocs: res.allocsPerHandoff()}
				if e == "sqlite" {
					pt.req, pt.rest = math.NaN(), math.NaN()
				}
				out[e] = append(out[e], pt)
			})
			if !ok {
				return out, fmt.Errorf("handoff %s/%d failed", e, n)
			}
		}
	}
	return out, nil
}

// tputPoint is one point of a throughput curve: lock+unlock per second of
// all clients together, and the whole process's heap allocations per
// lock+unlock over the same run.
type tputPoint struct {
	names  int
	ops    float64
	allocs float64
	// busy is the host's busy share of its cores over the run and cpu
	// its busy CPU time per lock+unlock in µs (clients and servers, see
	// hostCPU); cpuOK is false where the host's CPU cannot be read.
	busy, cpu float64
	cpuOK     bool
}

// throughputCurve runs s.clients direct clients of each engine, each
// locking and unlocking a name picked at random among n, for each n of
// s.names but the last, once for s.tput. The last (the most names, where
// the target is judged) runs in s.rounds interleaved rounds of s.round
// beside the engine's floor on s.clients clients of its own (each on a
// name of its own: the floor cannot wait) and the peer library, in a
// rotating order, and each of the three reports its medians: one point of
// a few seconds swung by ±30 % from run to run on a shared host, rounds a
// second apart share its drift. The clients keep their locks across the
// rounds, as a long-running process does; the first rounds include each
// client's first use of a name.
func throughputCurve(t *testing.T, s curveSizes) (map[string][]tputPoint, map[string]tputPoint, map[string]peerPoint) {
	pts, floors, peers := make(map[string][]tputPoint), make(map[string]tputPoint), make(map[string]peerPoint)
	for _, e := range curveEngines {
		t.Run("throughput/"+e, func(t *testing.T) {
			cr := newCurveRig(t, e)
			prefix := benchName(e + "-tput")
			clients := make([]curveClient, s.clients)
			for i := range clients {
				clients[i] = cr.client(t, false, benchRedisTTL, false)
				t.Cleanup(func() { _ = clients[i].close() })
			}
			most := s.names[len(s.names)-1]
			for _, n := range s.names[:len(s.names)-1] {
				pt, err := runClients(s.clients, s.tput, namesOps(clients, prefix, n))
				if err != nil {
					t.Fatalf("%s throughput over %d names: %v", e, n, err)
				}
				pt.names = n
				pts[e] = append(pts[e], pt)
			}
			sides := []*tputSide{
				{what: fmt.Sprintf("over %d names", most), names: most, ops: namesOps(clients, prefix, most)},
				{what: "floor", names: s.clients, ops: floorOps(t, cr, s.clients)}, // a name of its own per client
			}
			var peer *tputPeer
			if cr.peer != nil {
				peer = cr.peer(t)
				sides = append(sides, &tputSide{what: "peer", names: most, ops: peerOps(t, peer, s.clients, most)})
			}
			if err := interleave(s, sides); err != nil {
				t.Fatalf("%s throughput: %v", e, err)
			}
			pts[e] = append(pts[e], sides[0].median())
			floors[e] = sides[1].median()
			if peer != nil {
				peers[e] = peerPoint{tputPoint: sides[2].median(), what: peer.what}
			}
		})
	}
	return pts, floors, peers
}

// tputSide is one side of the interleaved throughput rounds: its ops and
// the point each round measured.
type tputSide struct {
	what  string
	names int
	ops   func(i int) func(ctx context.Context) error
	pts   []tputPoint
}

// interleave runs s.rounds rounds of every side for s.round each, the
// order rotating from round to round.
func interleave(s curveSizes, sides []*tputSide) error {
	for r := range s.rounds {
		for j := range sides {
			sd := sides[(r+j)%len(sides)]
			pt, err := runClients(s.clients, s.round, sd.ops)
			if err != nil {
				return fmt.Errorf("%s, round %d: %w", sd.what, r, err)
			}
			sd.pts = append(sd.pts, pt)
		}
	}
	return nil
}

// median is the side's point of medians: each figure the median of its
// rounds'.
func (sd *tputSide) median() tputPoint {
	col := func(f func(tputPoint) float64) float64 {
		v := make([]float64, len(sd.pts))
		for i, p := range sd.pts {
			v[i] = f(p)
		}
		return medianOf(v)
	}
	m := tputPoint{names: sd.names, cpuOK: true}
	m.ops = col(func(p tputPoint) float64 { return p.ops })
	m.allocs = col(func(p tputPoint) float64 { return p.allocs })
	m.busy = col(func(p tputPoint) float64 { return p.busy })
	m.cpu = col(func(p tputPoint) float64 { return p.cpu })
	for _, p := range sd.pts {
		m.cpuOK = m.cpuOK && p.cpuOK
	}
	return m
}

// namesOps is the baton side of a throughput point: client i locks and
// unlocks a name picked at random among n, keeping the lock of each name
// it has used (across calls of the op it returns for i).
func namesOps(clients []curveClient, prefix string, n int) func(i int) func(ctx context.Context) error {
	ms := make([]map[int]locker, len(clients))
	for i := range ms {
		ms[i] = make(map[int]locker)
	}
	return func(i int) func(ctx context.Context) error {
		return func(ctx context.Context) error {
			k := rand.IntN(n)
			m := ms[i][k]
			if m == nil {
				var err error
				if m, err = clients[i].mutex(fmt.Sprintf("%s/%d-%d", prefix, n, k)); err != nil {
					return err
				}
				ms[i][k] = m
			}
			l, err := m.Lock(ctx)
			if err != nil {
				return err
			}
			return l.Release(ctx)
		}
	}
}

// floorOps is the floor side: k floor pairs, client i on its own.
func floorOps(t *testing.T, cr *curveRig, k int) func(i int) func(ctx context.Context) error {
	floor := make([]*pair, k)
	for i := range floor {
		floor[i] = cr.floor(t)
	}
	return func(i int) func(ctx context.Context) error {
		return func(ctx context.Context) error {
			if err := floor[i].lock(ctx); err != nil {
				return err
			}
			return floor[i].unlock(ctx)
		}
	}
}

// peerOps is the peer library's side: k clients of peer, each locking
// and unlocking a name picked at random among n.
func peerOps(t *testing.T, peer *tputPeer, k, n int) func(i int) func(ctx context.Context) error {
	ops := make([]func(context.Context, string) error, k)
	for i := range ops {
		ops[i] = peer.client(t)
	}
	return func(i int) func(ctx context.Context) error {
		return func(ctx context.Context) error {
			return ops[i](ctx, peer.name(fmt.Sprintf("%d-%d", n, rand.IntN(n))))
		}
	}
}

// peerPoint is a peer library's throughput over the most names.
type peerPoint struct {
	tputPoint
	what string
}

// runClients runs op of k goroutines for d and returns the operations per
// second of all together, the process's allocations per operation
// (MemStats read once before the goroutines start and once after they
// end) and the host's CPU per operation (/proc/stat, read the same way).
func runClients(k int, d time.Duration, mk func(i int) func(ctx context.Context) error) (tputPoint, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d+60*time.Second)
	defer cancel()
	var done atomic.Int64
	errs := make([]error, k)
	var wg sync.WaitGroup
	ops := make([]func(ctx context.Context) error, k)
	for i := range ops {
		ops[i] = mk(i)
	}
	m0, h0 := readMem(), readHostCPU()
	start := time.Now()
	end := start.Add(d)
	for i, op := range ops {
		wg.Go(func() { // owner: runClients; ends at end or on an error
			for time.Now().Before(end) {
				if err := op(ctx); err != nil {
					errs[i] = err
					return
				}
				done.Add(1)
			}
		})
	}
	wg.Wait()
	took := time.Since(start)
	n := int(done.Load())
	allocs, _ := readMem().perOp(m0, n)
	pt := tputPoint{ops: float64(n) / took.Seconds(), allocs: allocs}
	pt.busy, pt.cpu, pt.cpuOK = readHostCPU().since(h0, n)
	return pt, errors.Join(errs...)
}

// heldPoint is the figures of many leases held by one client.
type heldPoint struct {
	leases       int
	g1, gN       int     // goroutines the client added with one lease and with all
	heapPerLease float64 // bytes of live heap per lease beyond the first
	restPerSec   float64 // requests per second at rest, pings and renewals included; NaN without a wire
	acquire      time.Duration
	release      time.Duration
	// acquireAllocs and releaseAllocs: the process's heap allocations per
	// lease over the same runs as acquire and release.
	acquireAllocs, releaseAllocs float64
	failed                       error // a lease was lost or an operation failed
}

// heldTTL is the lease time (session timeout) of the held row: renewals
// every 2 s on every engine.
const heldTTL = 6 * time.Second

// heldRow makes one counted client of each engine hold s.held leases.
func heldRow(t *testing.T, s curveSizes) map[string]heldPoint {
	out := make(map[string]heldPoint)
	for _, e := range curveEngines {
		t.Run("held/"+e, func(t *testing.T) {
			hp, err := holdOn(t, newCurveRig(t, e), s.held, s.rest)
			if err != nil {
				// As a handoff point: a measured outcome, reported.
				t.Logf("%s holding %d leases: %v", e, s.held, err)
				hp.failed = err
			}
			out[e] = hp
		})
	}
	return out
}

// settledGoroutines is the lowest goroutine count of a few looks, minus
// the counting proxies' pumps: goroutines that are ending settle in a few
// ms.
func settledGoroutines(cr *curveRig) int {
	g := math.MaxInt
	for range 5 {
		time.Sleep(20 * time.Millisecond)
		g = min(g, runtime.NumGoroutine()-cr.pumps())
	}
	return g
}

// restingGoroutines is settledGoroutines over a whole renewal period
// (heldTTL/3) and a little more. With thousands of leases a keeper's
// Renew call, each in a goroutine of its own (at most three at once,
// whatever the number of leases), is often in flight, and five looks in
// 100 ms all saw one or two of them on a slow host: the count the held
// row compares is the one between renewal rounds.
func restingGoroutines(cr *curveRig) int {
	g := math.MaxInt
	for end := time.Now().Add(heldTTL/3 + 200*time.Millisecond); time.Now().Before(end); {
		g = min(g, settledGoroutines(cr))
	}
	return g
}

func liveHeap() uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

func holdOn(t *testing.T, cr *curveRig, n int, rest time.Duration) (hp heldPoint, err error) {
	hp.leases = n
	base := settledGoroutines(cr)
	c := cr.client(t, true, heldTTL, false)
	closed := false
	defer func() {
		if !closed {
			_ = c.close()
		}
	}()
	prefix := benchName(cr.engine + "-held")
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	leases := make([]*baton.Lease, n)
	lock := func(i int) error {
		m, err := c.mutex(fmt.Sprintf("%s/%d", prefix, i))
		if err != nil {
			return err
		}
		leases[i], err = m.Lock(ctx)
		return err
	}
	// The acquire below runs on 32 goroutines, which grows a connection
	// pool (and the driver's goroutine a connection, as MariaDB's has) to
	// what 32 concurrent calls need. Grow it the same way first, on names
	// released at once, so that the one-lease figure and the all-leases
	// one compare leases, not pool sizes.
	if err := parallel(32, func(i int) error {
		m, err := c.mutex(fmt.Sprintf("%s/warm-%d", prefix, i))
		if err != nil {
			return err
		}
		l, err := m.Lock(ctx)
		if err != nil {
			return err
		}
		return l.Release(ctx)
	}); err != nil {
		return hp, err
	}
	if err := lock(0); err != nil {
		return hp, err
	}
	// Counted as the all-leases figure is (restingGoroutines): a
	// ZooKeeper or etcd session's follower outlives its last lease by
	// 100 ms (queuekit), and five looks within 100 ms of the warm-up
	// still saw one of its followers (zk: 8 with one lease, 7 with all).
	hp.g1 = restingGoroutines(cr) - base
	h1 := liveHeap()
	m0 := readMem()
	start := time.Now()
	if err := parallel(n-1, func(i int) error { return lock(i + 1) }); err != nil {
		return hp, err
	}
	hp.acquire = time.Since(start)
	hp.acquireAllocs, _ = readMem().perOp(m0, n-1)
	hp.gN = restingGoroutines(cr) - base
	hp.heapPerLease = (float64(liveHeap()) - float64(h1)) / float64(max(n-1, 1))
	hp.restPerSec = math.NaN()
	if cr.atRest != nil {
		r0, t0 := cr.atRest(), time.Now()
		time.Sleep(rest)
		hp.restPerSec = float64(cr.atRest()-r0) / time.Since(t0).Seconds()
	} else {
		time.Sleep(rest)
	}
	for i, l := range leases {
		if st := l.State(); st != baton.Held {
			return hp, fmt.Errorf("lease %d after the rest: %v, want Held", i, st)
		}
	}
	m1 := readMem()
	start = time.Now()
	if err := parallel(n, func(i int) error { return leases[i].Release(ctx) }); err != nil {
		return hp, err
	}
	hp.release = time.Since(start)
	hp.releaseAllocs, _ = readMem().perOp(m1, n)
	closed = true
	return hp, c.close()
}

// parallel runs f(0…n-1) on 32 goroutines and returns the first error.
func parallel(n int, f func(i int) error) error {
	const workers = 32
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() { // owner: parallel; ends when its share is done
			for i := w; i < n; i += workers {
				if err := f(i); err != nil {
					errs[w] = err
					return
				}
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// TestCurvesSmoke draws the cost curves at small sizes on every engine (3
// waiters, 40 held leases, 4 clients over 1 and 4 names): every handoff
// follows the rules (queue order on the queue engines, growing tokens),
// every lease is held through its rest and released, every point has its
// allocations counted, and the curves' charts draw as PNGs. TestRatios
// (-tags bench) draws the full curves.
func TestCurvesSmoke(t *testing.T) {
	s := sizesFor(false)
	c, _ := curveReport(t, s)
	if t.Failed() {
		return
	}
	checkCurveAllocs(t, c)
	checkCurveRest(t, c)
	dir := t.TempDir()
	charts, err := writeCharts(dir, c, nil, nil)
	if err != nil {
		t.Fatalf("writeCharts = %v", err)
	}
	for _, ch := range charts {
		b, err := os.ReadFile(filepath.Join(dir, ch.file))
		if err != nil || !bytes.HasPrefix(b, []byte("\x89PNG")) {
			t.Errorf("chart %s: %d bytes, %v; want a PNG", ch.file, len(b), err)
		}
	}
}

// checkCurveRest checks that every handoff point with a wire measured
// its rest window, and that on Linux every throughput point (the peers'
// too) read the host's CPU.
func checkCurveRest(t *testing.T, c curves) {
	t.Helper()
	for e, pts := range c.handoff {
		for _, p := range pts {
			if p.failed == nil && e != "sqlite" && !(p.rest >= 0) {
				t.Errorf("%s handoff at %d waiters: rest %v req/s, want a rate ≥ 0", e, p.waiters, p.rest)
			}
		}
	}
	if runtime.GOOS != "linux" {
		return
	}
	for e, pts := range c.tput {
		for _, p := range append(pts, c.tputFloor[e]) {
			if !p.cpuOK || !(p.cpu > 0) {
				t.Errorf("%s throughput over %d names: host CPU %v µs/op (read %v), want > 0", e, p.names, p.cpu, p.cpuOK)
			}
		}
	}
	for e, p := range c.tputPeer {
		if !p.cpuOK || !(p.cpu > 0) {
			t.Errorf("%s peer throughput: host CPU %v µs/op (read %v), want > 0", e, p.cpu, p.cpuOK)
		}
	}
}

// checkCurveAllocs checks that every handoff, throughput and held point
// that ran has its allocations per operation counted: finite and at least
// one (each operation is a round trip at least, which allocates).
func checkCurveAllocs(t *testing.T, c curves) {
	t.Helper()
	bad := func(a float64) bool { return !(a >= 1) || math.IsInf(a, 0) }
	for e, pts := range c.handoff {
		for _, p := range pts {
			if p.failed == nil && bad(p.allocs) {
				t.Errorf("%s handoff at %d waiters: %v allocs per handoff, want ≥ 1 and finite", e, p.waiters, p.allocs)
			}
		}
	}
	for e, pts := range c.tput {
		for _, p := range pts {
			if bad(p.allocs) {
				t.Errorf("%s throughput over %d names: %v allocs/op, want ≥ 1 and finite", e, p.names, p.allocs)
			}
		}
		if f := c.tputFloor[e]; bad(f.allocs) {
			t.Errorf("%s floor throughput: %v allocs/op, want ≥ 1 and finite", e, f.allocs)
		}
	}
	for e, h := range c.held {
		if h.failed == nil && (bad(h.acquireAllocs) || bad(h.releaseAllocs)) {
			t.Errorf("%s held leases: %v·%v allocs per lease to acquire·release, want ≥ 1 and finite", e, h.acquireAllocs, h.releaseAllocs)
		}
	}
}
