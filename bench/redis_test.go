package bench_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/batontest/testenv"
	"github.com/baton-go/baton/engine"
	"github.com/baton-go/baton/redislock"
	bsmlock "github.com/bsm/redislock"
	"github.com/redis/go-redis/v9"
)

// redisAddr is the Redis server of the Redis rows: BATON_BENCH_REDIS, else
// the shared test server (keys of this run only, deleted at cleanup).
func redisAddr(tb testing.TB) string {
	tb.Helper()
	if a := os.Getenv("BATON_BENCH_REDIS"); a != "" {
		return a
	}
	return testenv.Redis(tb)
}

// cmdCounter is a go-redis hook counting the commands a client sends, by
// name, pipelined ones included (the breakdown beside the round trips).
type cmdCounter struct {
	mu sync.Mutex
	m  map[string]int64
}

func newCmdCounter() *cmdCounter { return &cmdCounter{m: make(map[string]int64)} }

func (c *cmdCounter) add(cmds ...redis.Cmder) {
	c.mu.Lock()
	for _, cmd := range cmds {
		c.m[cmd.Name()]++
	}
	c.mu.Unlock()
}

func (c *cmdCounter) snapshot() map[string]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int64, len(c.m))
	for k, v := range c.m {
		out[k] = v
	}
	return out
}

func (c *cmdCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *cmdCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.add(cmd)
		return next(ctx, cmd)
	}
}

func (c *cmdCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.add(cmds...)
		return next(ctx, cmds)
	}
}

// newRedisClient connects to addr, closed at cleanup. With counted, it
// goes through a turnProxy (returned) and counts its commands.
func newRedisClient(tb testing.TB, addr string, counted bool) (*redis.Client, *turnProxy, *cmdCounter) {
	tb.Helper()
	var p *turnProxy
	var cc *cmdCounter
	if counted {
		p = startTurnProxy(tb, addr, redisPing)
		addr = p.Addr()
	}
	// ContextTimeoutEnabled, as redislock's doc recommends; both libraries
	// share the client.
	rdb := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
	if counted {
		cc = newCmdCounter()
		rdb.AddHook(cc)
	}
	tb.Cleanup(func() { _ = rdb.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := rdb.Ping(ctx).Err(); err != nil {
		tb.Fatalf("PING %s = %v", addr, err)
	}
	return rdb, p, cc
}

// redisRig is the Redis lock pairs, timed on a direct client and counted
// on a proxied one.
type redisRig struct {
	pairs   []*pair       // baton, floor, peer
	rdb     *redis.Client // the pairs' server, for its statistics
	counted []*pair
	turns   *turnProxy
	cmds    *cmdCounter
}

// benchRedisTTL is the lease time of the uncontended rows: long enough
// that no renewal falls into a measurement.
const benchRedisTTL = 30 * time.Second

func newRedisRig(tb testing.TB) *redisRig {
	tb.Helper()
	addr := redisAddr(tb)
	rdb, _, _ := newRedisClient(tb, addr, false)
	r := &redisRig{pairs: redisPairs(tb, rdb), rdb: rdb}
	crdb, p, cc := newRedisClient(tb, addr, true)
	r.counted, r.turns, r.cmds = redisPairs(tb, crdb), p, cc
	return r
}

// redisPrefix is a key prefix of this run, removed at cleanup.
func redisPrefix(tb testing.TB, rdb redis.UniversalClient, kind string) string {
	tb.Helper()
	prefix := fmt.Sprintf("baton-bench:%s-%d", kind, time.Now().UnixNano())
	tb.Cleanup(func() { deletePrefix(rdb, prefix) })
	return prefix
}

// deletePrefix removes every key starting with prefix (SCAN, then DEL in
// batches).
func deletePrefix(rdb redis.UniversalClient, prefix string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var cursor uint64
	for {
		ks, next, err := rdb.Scan(ctx, cursor, prefix+"*", 1000).Result()
		if err != nil {
			return
		}
		for len(ks) > 0 {
			n := min(len(ks), 500)
			_ = rdb.Del(ctx, ks[:n]...).Err()
			ks = ks[n:]
		}
		if cursor = next; cursor == 0 {
			return
		}
	}
}

// countKeys counts the keys starting with prefix.
func countKeys(ctx context.Context, rdb redis.UniversalClient, prefix string) (int, error) {
	var cursor uint64
	n := 0
	for {
		ks, next, err := rdb.Scan(ctx, cursor, prefix+"*", 1000).Result()
		if err != nil {
			return 0, err
		}
		n += len(ks)
		if cursor = next; cursor == 0 {
			return n, nil
		}
	}
}

// redisEntries counts the holders and waiters of name as c inspects
// them: one while the mutex is held, none once it is released.
func redisEntries(c *baton.Client, name string) func(context.Context) (int, error) {
	return func(ctx context.Context) (int, error) {
		in, err := c.Inspect(ctx, name)
		return len(in.Holders) + len(in.Waiters), err
	}
}

// redisPairs builds on rdb:
//
//   - baton: redislock's mutex, lock+unlock (one script call each way;
//     the acquire also mints the fencing token).
//   - floor: PING + PING, the two round trips any lock needs.
//   - peer: bsm/redislock Obtain + Release (SET NX PX, then a
//     compare-and-delete script; no token).
func redisPairs(tb testing.TB, rdb *redis.Client) []*pair {
	tb.Helper()
	prefix := redisPrefix(tb, rdb, "redis")
	c, err := redislock.New(rdb, redislock.Options{TTL: benchRedisTTL, Prefix: prefix})
	if err != nil {
		tb.Fatalf("redislock.New = %v", err)
	}
	tb.Cleanup(func() { _ = c.Close() })
	name := "baton"
	m, err := c.Mutex(name)
	if err != nil {
		tb.Fatalf("Mutex(%q) = %v", name, err)
	}
	bp := batonPair(m, "redislock Mutex", redisEntries(c, name))

	ping := func(ctx context.Context) error {
		s, err := rdb.Ping(ctx).Result()
		if err == nil && s != "PONG" {
			err = fmt.Errorf("PING = %q, want PONG", s)
		}
		return err
	}
	floor := &pair{impl: "floor", what: "PING + PING", lock: ping, unlock: ping}

	locker := bsmlock.New(rdb)
	key := prefix + ":bsm"
	var l *bsmlock.Lock
	peer := &pair{impl: "peer", what: "bsm/redislock Obtain + Release",
		lock: func(ctx context.Context) (err error) {
			l, err = locker.Obtain(ctx, key, benchRedisTTL, nil)
			return err
		},
		unlock:  func(ctx context.Context) error { return l.Release(ctx) },
		entries: keyEntries(rdb, key),
	}
	return readingServers([]*pair{bp, floor, peer, mintPair(rdb, prefix)}, rdb)
}

// The mint floor is the least a lock that mints a fencing token costs on
// Redis: one script that takes the key with SET NX PX and mints the token
// with INCR, one that compares the owner and deletes. Beside baton it
// says what baton adds to the mint (its layout, its waiter line); beside
// bsm/redislock, which mints nothing, what the token itself costs.
var (
	mintAcquire = redis.NewScript(`
if not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return -1 end
return redis.call('INCR', KEYS[2])
`)
	mintRelease = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`)
)

// mintPair is the mint floor, on keys under prefix.
func mintPair(rdb *redis.Client, prefix string) *pair {
	keys := []string{prefix + ":mint", prefix + ":mint-counter"}
	ttl := benchRedisTTL.Milliseconds()
	var owner string
	return &pair{impl: "mint", what: "script SET NX PX + INCR; script GET + DEL",
		lock: func(ctx context.Context) error {
			owner = engine.NewOwnerID()
			tok, err := mintAcquire.Run(ctx, rdb, keys, owner, ttl).Int64()
			if err == nil && tok < 1 {
				err = fmt.Errorf("mint floor: not granted (%d)", tok)
			}
			return err
		},
		unlock: func(ctx context.Context) error {
			n, err := mintRelease.Run(ctx, rdb, keys[:1], owner).Int64()
			if err == nil && n != 1 {
				err = fmt.Errorf("mint floor: released %d keys, want 1", n)
			}
			return err
		},
		entries: keyEntries(rdb, keys[0]),
	}
}

// keyEntries counts a pair's entries as whether its one key exists.
func keyEntries(rdb *redis.Client, key string) func(context.Context) (int, error) {
	return func(ctx context.Context) (int, error) {
		n, err := rdb.Exists(ctx, key).Result()
		return int(n), err
	}
}

// heldReport is the figures of many held leases on one client.
type heldReport struct {
	leases      int
	ttl         time.Duration
	periods     int
	goroutines  int     // goroutines added by the client holding every lease
	goroutines1 int     // the same with one lease
	flights     float64 // request flights per renewal period (idle client ≈ 0)
	commands    map[string]int64
	cpu         time.Duration // process CPU (user+sys) per renewal period
	acquire     time.Duration // acquiring them all
	release     time.Duration // Close releasing them all
	// acquireAllocs and releaseAllocs are the process's heap allocations
	// per lease while acquiring them all and while Close releases them;
	// renewAllocs per renewal period.
	acquireAllocs, releaseAllocs, renewAllocs float64
	renewals                                  uint64 // keeper rounds over the measurement
	lastRound                                 time.Duration
	lost                                      uint64
	leftover                                  int // keys left after Close
}

// holdMany acquires n leases on a fresh redislock client through a
// counting proxy, with lease time ttl, and watches `periods` renewal
// periods (TTL/3 each): goroutines, request flights and process CPU per
// period. Then Close releases them all and the keys must be gone.
func holdMany(t *testing.T, n int, ttl time.Duration, periods int) heldReport {
	t.Helper()
	addr := redisAddr(t)
	rdb, turns, cmds := newRedisClient(t, addr, true)
	prefix := redisPrefix(t, rdb, "held")
	hr := heldReport{leases: n, ttl: ttl, periods: periods}

	settle := func() int {
		// Goroutines that are ending (a pool's dialer, a timer) settle in
		// a few ms; take the lowest of a few looks.
		g := int(^uint(0) >> 1)
		for range 5 {
			time.Sleep(20 * time.Millisecond)
			// The proxy's two pumps per connection are the bench's, not
			// the client's.
			g = min(g, runtime.NumGoroutine()-2*turns.Conns())
		}
		return g
	}
	base := settle()
	// ReplicaAckTimeout must be below TTL/4 even without ReplicaAcks.
	c, err := redislock.New(rdb, redislock.Options{TTL: ttl, Prefix: prefix, ReplicaAckTimeout: ttl / 5})
	if err != nil {
		t.Fatalf("redislock.New = %v", err)
	}
	closed := false
	defer func() {
		if !closed {
			_ = c.Close()
		}
	}()

	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	lock := func(i int) (*baton.Lease, error) {
		m, err := c.Mutex(fmt.Sprintf("held-%d", i))
		if err != nil {
			return nil, err
		}
		return m.Lock(ctx)
	}
	first, err := lock(0)
	if err != nil {
		t.Fatalf("Lock(held-0) = %v", err)
	}
	hr.goroutines1 = settle() - base

	m0 := readMem()
	start := time.Now()
	leases := make([]*baton.Lease, n)
	leases[0] = first
	const workers = 32
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() { // owner: holdMany; ends when its share is acquired
			defer wg.Done()
			for i := 1 + w; i < n; i += workers {
				l, err := lock(i)
				if err != nil {
					errs <- fmt.Errorf("Lock(held-%d) = %v", i, err)
					return
				}
				leases[i] = l
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	hr.acquire = time.Since(start)
	hr.acquireAllocs, _ = readMem().perOp(m0, n-1)
	hr.goroutines = settle() - base

	// Measure whole renewal periods, starting half a period after a round
	// began, so that each window holds one round per period whatever the
	// rounds' jitter.
	period := ttl / 3
	rc, ok := baton.As[*redislock.Client](c)
	if !ok {
		t.Fatal("As[*redislock.Client] failed")
	}
	st0 := rc.Stats()
	for wait := time.Now().Add(3 * period); rc.Stats().Rounds == st0.Rounds; {
		if time.Now().After(wait) {
			t.Fatalf("no renewal round within %v of holding %d leases (TTL %v)", 3*period, n, ttl)
		}
		time.Sleep(period / 50)
	}
	time.Sleep(period / 2)
	t0, c0, cmd0, st1, m1 := turns.Turns(), processCPU(), cmds.snapshot(), rc.Stats(), readMem()
	time.Sleep(time.Duration(periods) * period)
	t1, c1, cmd1, st2, m2 := turns.Turns(), processCPU(), cmds.snapshot(), rc.Stats(), readMem()
	hr.renewAllocs, _ = m2.perOp(m1, periods)
	hr.flights = float64(t1-t0) / float64(periods)
	hr.cpu = (c1 - c0) / time.Duration(periods)
	hr.commands = diff(cmd1, cmd0)
	hr.renewals = st2.Rounds - st1.Rounds
	hr.lastRound = st2.LastRound
	hr.lost = st2.Lost
	for i, l := range leases {
		if st := l.State(); st != baton.Held {
			t.Errorf("lease held-%d after %d periods: %v, want Held", i, periods, st)
			break
		}
	}

	m3 := readMem()
	start = time.Now()
	if err := c.Close(); err != nil {
		t.Errorf("Close() = %v", err)
	}
	closed = true
	hr.release = time.Since(start)
	hr.releaseAllocs, _ = readMem().perOp(m3, n)
	if hr.leftover, err = countKeys(ctx, rdb, prefix+":{"); err != nil {
		t.Fatalf("counting keys left: %v", err)
	}
	return hr
}

// TestRedisSmoke checks the Redis pairs really lock and unlock (the floor
// really pings), that the counted twins make exactly the round trips
// baton's target allows (one to acquire, one to release), and that a client holding 300
// leases renews them with the same goroutines as one lease and a few
// pipelined round trips per renewal period.
func TestRedisSmoke(t *testing.T) {
	r := newRedisRig(t)
	smokeRig(t, &rig{engine: "redis", pairs: r.pairs})
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	for _, p := range r.counted {
		// Two warm-ups: the first use loads scripts and dials connections,
		// and baton's first grant takes a connection of the pool for its
		// renewals (redislock's warm connection, pinned in the background
		// by a PING), so the second dials the pool's next one.
		for i := range 2 {
			if err := p.lock(ctx); err != nil {
				t.Fatalf("counted %s lock = %v", p.what, err)
			}
			if err := p.unlock(ctx); err != nil {
				t.Fatalf("counted %s unlock = %v", p.what, err)
			}
			if i == 0 {
				time.Sleep(100 * time.Millisecond) // the pin's PING, on loopback
			}
		}
		c0 := r.cmds.snapshot()
		t0 := r.turns.Turns()
		if err := p.lock(ctx); err != nil {
			t.Fatalf("counted %s lock = %v", p.what, err)
		}
		t1 := r.turns.Turns()
		if err := p.unlock(ctx); err != nil {
			t.Fatalf("counted %s unlock = %v", p.what, err)
		}
		c2 := r.cmds.snapshot()
		t2 := r.turns.Turns()
		cmds := diff(c2, c0)
		var n int64
		for _, v := range cmds {
			n += v
		}
		switch {
		case n != 2:
			t.Errorf("counted %s: %d commands to lock and unlock (%v), want 2", p.what, n, cmds)
		case p.impl == "baton":
			// The acquire script and the release script are one command
			// each on the client's connection; the round trips also count
			// the wake channel's SUBSCRIBE/UNSUBSCRIBE that Lock's waiting
			// path sends on the pub/sub connection in the background, so
			// they are reported (TestRatios), not asserted here.
			t.Logf("counted %s: %d round trips to lock, %d to unlock (commands %v)", p.what, t1-t0, t2-t1, cmds)
		case t1-t0 != 1 || t2-t1 != 1:
			t.Errorf("counted %s: %d round trips to lock, %d to unlock; want 1 and 1 (commands %v)", p.what, t1-t0, t2-t1, cmds)
		}
	}

	hr := holdMany(t, 300, 900*time.Millisecond, 2)
	t.Logf("300 held leases: %+v", hr)
	if hr.goroutines != hr.goroutines1 {
		t.Errorf("goroutines with 300 leases = %d, with 1 lease = %d; want equal", hr.goroutines, hr.goroutines1)
	}
	// 300 leases fit one pipeline: about one round trip per period (a
	// round delayed by a loaded host may fall outside the window), not 300.
	if hr.renewals == 0 || hr.flights*float64(hr.periods) < 1 || hr.flights > 6 {
		t.Errorf("300 leases: %d renewal rounds, %.1f round trips per period; want ≥ 1 round, ≥ 1 round trip in the window and ≤ 6 per period", hr.renewals, hr.flights)
	}
	if hr.leftover != 0 {
		t.Errorf("keys left after Close = %d, want 0", hr.leftover)
	}
	// Every Lock and the renewal rounds allocate: a zero or NaN means the
	// count was not taken over the operations.
	for what, a := range map[string]float64{"acquire per lease": hr.acquireAllocs, "release per lease": hr.releaseAllocs, "renewal period": hr.renewAllocs} {
		if !(a >= 1) || math.IsInf(a, 0) {
			t.Errorf("300 leases: %v allocs per %s, want ≥ 1 and finite", a, what)
		}
	}
}

// processCPU is the user+system CPU time this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// readingServers gives each pair the nodes' CPU reading (see loop).
func readingServers[C redis.UniversalClient](pairs []*pair, nodes ...C) []*pair {
	for _, p := range pairs {
		p.server = func(ctx context.Context) (time.Duration, error) { return serverCPUOf(ctx, nodes...) }
	}
	return pairs
}

// serverCPUOf is used_cpu_user + used_cpu_sys of each node (INFO cpu,
// microsecond resolution), summed: the servers' CPU time so far, reading
// their sockets and writing replies included.
func serverCPUOf[C redis.UniversalClient](ctx context.Context, nodes ...C) (time.Duration, error) {
	var total float64
	for _, n := range nodes {
		cpu, err := infoSection(ctx, n, "cpu")
		if err != nil {
			return 0, err
		}
		for _, k := range []string{"used_cpu_user", "used_cpu_sys"} {
			f, err := strconv.ParseFloat(cpu[k], 64)
			if err != nil {
				return 0, fmt.Errorf("INFO cpu %s = %q: %w", k, cpu[k], err)
			}
			total += f
		}
	}
	return time.Duration(total * float64(time.Second)), nil
}

// redisReport prints the Redis rows: uncontended lock+unlock against
// bsm/redislock (target ≤ 1.05×), the 2×PING floor and the mint floor
// (see mintPair), with round trips
// through the counting proxy (target: one each way), and the figures of
// 10 000 held leases.
func redisReport(t *testing.T, rounds int) (misses []string) {
	r := newRedisRig(t)
	res := interleaved(t, "redis", r.pairs, rounds)
	c0 := r.cmds.snapshot()
	countFlights(t, "redis", res, r.counted, r.turns, 200)
	cmds := diff(r.cmds.snapshot(), c0)
	bp, bf := ratio(res["baton"], res["peer"]), ratio(res["baton"], res["floor"])
	verdict := "PASS"
	if bp > 1.05 || res["baton"].reqOp > 2.05 {
		verdict = "MISS"
		misses = append(misses, fmt.Sprintf("redis uncontended (%.3f× bsm/redislock, %.2f round trips)", bp, res["baton"].reqOp))
	}
	var tw strings.Builder
	w := tabwriter.NewWriter(&tw, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "engine\tbaton µs/op\tfloor µs/op\tpeer µs/op\tmint µs/op\tbaton/floor\tbaton/peer\tbaton/mint\tmint/peer\trt/op b·f·p·m\tallocs/op b·f·p·m\ttarget\tresult\t")
	fmt.Fprintf(w, "redis\t%s\t%s\t%s\t%s\t%.3f\t%.3f\t%s\t%s\t%s\t%s\t≤1.05×peer, 2 rt\t%s\t\n", micros(res, "baton"), micros(res, "floor"), micros(res, "peer"), micros(res, "mint"),
		bf, bp, ratioOf(res, "baton", "mint"), ratioOf(res, "mint", "peer"),
		flights(true, res, "baton", "floor", "peer", "mint"), allocsOf(res, "baton", "floor", "peer", "mint"), verdict)
	recordRes("redis", res, "peer", "bsm/redislock")
	w.Flush()
	notes := spreads("redis", r.pairs, res)
	notes = append(notes, fmt.Sprintf("commands sent by the counted client over the 3×200 counted ops: %v", cmds))
	// Where each pair's server time goes, per command (the pairs one
	// after the other, 2,000 ops each, after the timed rounds).
	for _, p := range r.pairs {
		prof, err := commandProfile(t.Context(), p, 2000, r.rdb)
		if err != nil {
			t.Fatalf("redis %s command profile: %v", p.impl, err)
		}
		notes = append(notes, fmt.Sprintf("redis %s server: %s", p.impl, prof))
	}
	report(t, "redis", "Redis lock+unlock, %d interleaved rounds (peer: bsm/redislock; floor: 2×PING; mint: the least lock that mints a token, one script SET NX PX + INCR and one GET + DEL; rt/op: request flights through a counting proxy, every connection of the client; allocs/op: the process's heap allocations per op over the timed loop, median over rounds):\n%s\n%s",
		rounds, tw.String(), strings.Join(notes, "\n"))

	const n = 10000
	ttl := 6 * time.Second
	ctx := t.Context()
	rdb, _, _ := newRedisClient(t, redisAddr(t), false)
	// Every client of the server counts: a reference only (0 if unread).
	s0, _ := serverCPUOf(ctx, rdb)
	s0t := time.Now()
	hr := holdMany(t, n, ttl, 5)
	s1, _ := serverCPUOf(ctx, rdb)
	serverCPU := float64(s1-s0) / float64(time.Since(s0t)) // CPU seconds per second, whole run
	report(t, "redis-held", "%d held leases on one client (TTL %v, renewal period %v, %d periods measured):\n"+
		"  goroutines added by the client: %d (with 1 lease: %d)\n"+
		"  round trips per renewal period: %.2f (renewal rounds in the window: %d, last round took %v; commands %v)\n"+
		"  process CPU per renewal period: %v (%.2f%% of one core); process heap allocations per renewal period: %.0f\n"+
		"  server CPU over the whole run (every client of the server): %.1f%% of one core\n"+
		"  acquiring all: %v (32 goroutines, %.1f allocs/lease); Close releasing all: %v (%.1f allocs/lease); keys left: %d; leases lost: %d",
		n, ttl, ttl/3, hr.periods, hr.goroutines, hr.goroutines1, hr.flights, hr.renewals, hr.lastRound, hr.commands,
		hr.cpu, 100*float64(hr.cpu)/float64(ttl/3), hr.renewAllocs, 100*serverCPU, hr.acquire.Round(time.Millisecond), hr.acquireAllocs,
		hr.release.Round(time.Millisecond), hr.releaseAllocs, hr.leftover, hr.lost)
	if hr.goroutines != hr.goroutines1 || hr.leftover != 0 || hr.lost != 0 {
		misses = append(misses, fmt.Sprintf("redis %d held leases (goroutines %d vs %d with one, %d keys left, %d lost)", n, hr.goroutines, hr.goroutines1, hr.leftover, hr.lost))
	}
	return misses
}
