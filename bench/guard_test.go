package bench_test

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/etcdlock"
	"github.com/baton-go/baton/kubelock"
	"github.com/baton-go/baton/redislock"
	"github.com/baton-go/baton/redlock"
	"github.com/baton-go/baton/sqllock"
	"github.com/baton-go/baton/zklock"
	"github.com/redis/go-redis/v9"
)

// countedMutex is a baton mutex on a client whose requests are counted
// exactly, on the client's side of the wire: requests is a running count
// and breakdown the same by command or method, for messages.
type countedMutex struct {
	engine    string
	unit      string // what one count is
	m         locker
	requests  func() int64
	breakdown func() map[string]int64
}

// requestGuard is one protocol's expected count per uncontended
// lock+unlock, with why it is that number.
type requestGuard struct {
	engine string
	max    func(nodes int) int64
	why    string
	make   func(tb testing.TB) (*countedMutex, int) // and the number of nodes
}

// requestGuards are the protocols' counts. Each is a ceiling: a change that
// makes an engine send one more request per lock+unlock fails the guard; a
// change that saves one passes (lower the number then).
var requestGuards = []requestGuard{
	{engine: "zk", max: func(int) int64 { return 3 },
		why:  "Curator's InterProcessMutex: create the EPHEMERAL_SEQUENTIAL entry, getChildren to see it is first, delete it (pings not counted)",
		make: func(tb testing.TB) (*countedMutex, int) { return guardZK(tb), 1 }},
	{engine: "etcd", max: func(int) int64 { return 2 },
		why:  "one transaction that puts the key if absent and reads the queue head, one transaction that deletes the key if it is still ours (lease keepalives not counted)",
		make: func(tb testing.TB) (*countedMutex, int) { return guardEtcd(tb), 1 }},
	{engine: "redis", max: func(int) int64 { return 2 },
		why:  "one acquire script (takes the key, mints the token) and one release script, each one round trip; an uncontended Lock touches no pub/sub channel",
		make: func(tb testing.TB) (*countedMutex, int) { return guardRedis(tb), 1 }},
	{engine: "redlock", max: func(n int) int64 { return int64(2 * n) },
		why: "the acquire script on each of the N nodes and the release on each node; no write-back while no granting node lags the token by N or more (it was N/2 more when every granting node but the minter was raised)",
		make: func(tb testing.TB) (*countedMutex, int) {
			m := guardRedlock(tb)
			return m, len(redlockAddrs(tb))
		}},
	{engine: "postgres", max: func(int) int64 { return 2 },
		why:  "one statement to acquire (an upsert that inserts a missing row or takes a free one, minting the token under the row's lock and RETURNING it), one to release (an UPDATE that also NOTIFYs)",
		make: func(tb testing.TB) (*countedMutex, int) { return guardSQL(tb, "postgres"), 1 }},
	{engine: "mysql", max: func(int) int64 { return 2 },
		why:  "acquire is one autocommitted upsert that takes the row only if it is free and holds a smaller token, with the token sequence's NEXTVAL, which comes back as LAST_INSERT_ID (MariaDB has no UPDATE … RETURNING; no transaction, so no BEGIN or COMMIT: it was 6, then 3 with a counter row bumped first, as MySQL still does), release is one UPDATE",
		make: func(tb testing.TB) (*countedMutex, int) { return guardSQL(tb, "mysql"), 1 }},
	{engine: "kube", max: func(int) int64 { return 4 },
		why:  "every write is decided on a fresh read and conditional on its resourceVersion: a Get and an Update to acquire, a Get and an Update to release, as client-go's LeaderElector does (the waiters' watch opens only when one waits)",
		make: func(tb testing.TB) (*countedMutex, int) { return guardKube(tb), 1 }},
}

// TestRequestGuard fails when an engine's uncontended lock+unlock sends
// more requests than its protocol needs. It counts exactly, on the
// client's side of the wire (ZooKeeper: request frames by opcode, pings
// left out; etcd: gRPC calls, keepalives left out; Redis,
// Redlock, PostgreSQL, MariaDB: request flights through a counting
// proxy), and takes the fewest of several operations: what comes and
// goes between operations is not the protocol (a keeper's background
// renewal falling into one; under load, a Redlock node's connection
// re-dialled because the acquire round stopped at a majority and
// abandoned that node's late answer, which the median caught in CI),
// while a request the protocol needs is sent by every operation. It runs
// in the default `go test` of the module, in a few seconds.
func TestRequestGuard(t *testing.T) {
	for _, g := range requestGuards {
		t.Run(g.engine, func(t *testing.T) {
			cm, nodes := g.make(t)
			per, bd, err := countPerOp(t.Context(), cm, 7)
			if err != nil {
				t.Fatalf("%s lock+unlock: %v", g.engine, err)
			}
			want := g.max(nodes)
			if per > want {
				t.Errorf("%s: %d %s per lock+unlock, want ≤ %d (%s); sent over one op: %v",
					g.engine, per, cm.unit, want, g.why, bd)
			} else {
				t.Logf("%s: %d %s per lock+unlock (≤ %d); one op: %v", g.engine, per, cm.unit, want, bd)
			}
		})
	}
}

// countPerOp runs one warm-up lock+unlock (scripts load, containers and
// connections are made), then k more, and returns the smallest count of
// one and that one's breakdown.
func countPerOp(ctx context.Context, cm *countedMutex, k int) (int64, map[string]int64, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	one := func() (int64, map[string]int64, error) {
		var b0 map[string]int64
		if cm.breakdown != nil {
			b0 = cm.breakdown()
		}
		r0 := cm.requests()
		l, err := cm.m.Lock(ctx)
		if err != nil {
			return 0, nil, fmt.Errorf("Lock = %w", err)
		}
		if err := l.Release(ctx); err != nil {
			return 0, nil, fmt.Errorf("Release = %w", err)
		}
		// A reply may be read before the proxy has counted the next
		// request of a pipeline; let the wire settle.
		time.Sleep(5 * time.Millisecond)
		var bd map[string]int64
		if cm.breakdown != nil {
			bd = diff(cm.breakdown(), b0)
		}
		return cm.requests() - r0, bd, nil
	}
	if _, _, err := one(); err != nil {
		return 0, nil, err
	}
	type obs struct {
		n  int64
		bd map[string]int64
	}
	all := make([]obs, 0, k)
	for range k {
		n, bd, err := one()
		if err != nil {
			return 0, nil, err
		}
		all = append(all, obs{n, bd})
	}
	least := slices.MinFunc(all, func(a, b obs) int { return int(a.n - b.n) })
	return least.n, least.bd, nil
}

func guardZK(tb testing.TB) *countedMutex {
	p := startZKFrameProxy(tb, zkAddr(tb))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := zklock.Dial(ctx, []string{p.Addr()}, zklock.Options{SessionTimeout: zkSessionTimeout})
	if err != nil {
		tb.Fatalf("zklock.Dial = %v", err)
	}
	tb.Cleanup(func() { c.Close() })
	m, err := c.Mutex(benchName("guard-zk"))
	if err != nil {
		tb.Fatalf("Mutex = %v", err)
	}
	return &countedMutex{engine: "zk", unit: "requests", m: m, requests: p.requests, breakdown: p.snapshot}
}

func guardEtcd(tb testing.TB) *countedMutex {
	rc := newRPCCounter()
	c, err := etcdlock.New(etcdClient(tb, rc), etcdlock.Options{TTL: etcdTTL})
	if err != nil {
		tb.Fatalf("etcdlock.New = %v", err)
	}
	tb.Cleanup(func() { c.Close() })
	m, err := c.Mutex(benchName("guard-etcd"))
	if err != nil {
		tb.Fatalf("Mutex = %v", err)
	}
	return &countedMutex{engine: "etcd", unit: "requests", m: m, requests: rc.requests, breakdown: rc.snapshot}
}

func guardRedis(tb testing.TB) *countedMutex {
	rdb, pp, cc := newRedisClient(tb, redisAddr(tb), true)
	c, err := redislock.New(rdb, redislock.Options{TTL: benchRedisTTL, Prefix: redisPrefix(tb, rdb, "guard")})
	if err != nil {
		tb.Fatalf("redislock.New = %v", err)
	}
	tb.Cleanup(func() { _ = c.Close() })
	m, err := c.Mutex("guard")
	if err != nil {
		tb.Fatalf("Mutex = %v", err)
	}
	return &countedMutex{engine: "redis", unit: "round trips", m: m, requests: pp.Turns, breakdown: cc.snapshot}
}

func guardRedlock(tb testing.TB) *countedMutex {
	addrs := redlockAddrs(tb)
	nodes := make([]redis.UniversalClient, len(addrs))
	sum := &turnSum{}
	for i, a := range addrs {
		rdb, p, _ := newRedisClient(tb, a, true)
		nodes[i] = rdb
		sum.ps = append(sum.ps, p)
	}
	prefix := fmt.Sprintf("baton-bench:guard-%d:", time.Now().UnixNano())
	tb.Cleanup(func() {
		for _, n := range nodes {
			deletePrefix(n, prefix)
		}
	})
	c, err := redlock.New(nodes, redlock.Options{TTL: benchRedisTTL, Prefix: prefix})
	if err != nil {
		tb.Fatalf("redlock.New = %v", err)
	}
	tb.Cleanup(func() { _ = c.Close() })
	m, err := c.Mutex("guard")
	if err != nil {
		tb.Fatalf("Mutex = %v", err)
	}
	return &countedMutex{engine: "redlock", unit: "round trips (all nodes)", m: m, requests: sum.Turns}
}

func guardKube(tb testing.TB) *countedMutex {
	cnt := &kubeCounter{}
	cs, ns := kubeClientset(tb, cnt)
	c, err := kubelock.New(cs, ns, kubelock.Options{TTL: kubeTTL})
	if err != nil {
		tb.Fatalf("kubelock.New = %v", err)
	}
	tb.Cleanup(func() { _ = c.Close() })
	m, err := c.Mutex(kubeLeaseName("guard"))
	if err != nil {
		tb.Fatalf("Mutex = %v", err)
	}
	return &countedMutex{engine: "kube", unit: "requests", m: m, requests: cnt.requests, breakdown: cnt.snapshot}
}

func guardSQL(tb testing.TB, name string) *countedMutex {
	var be sqlBackend
	for _, b := range sqlBackends(tb.TempDir()) {
		if b.name == name {
			be = b
		}
	}
	db, p := be.open(tb, true)
	return guardSQLClient(tb, name, db, p)
}

func guardSQLClient(tb testing.TB, name string, db *sql.DB, p *turnProxy) *countedMutex {
	c, err := sqllock.New(db, sqllock.Options{TablePrefix: benchTablePrefix})
	if err != nil {
		tb.Fatalf("sqllock.New(%s) = %v", name, err)
	}
	tb.Cleanup(func() { _ = c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sc, _ := baton.As[*sqllock.Client](c)
	if err := sc.Migrate(ctx); err != nil {
		tb.Fatalf("Migrate(%s) = %v", name, err)
	}
	m, err := c.Mutex(benchName("guard-" + name))
	if err != nil {
		tb.Fatalf("Mutex = %v", err)
	}
	return &countedMutex{engine: name, unit: "round trips", m: m, requests: p.Turns}
}
