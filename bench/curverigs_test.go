package bench_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/etcdlock"
	"github.com/baton-go/baton/fence"
	"github.com/baton-go/baton/redislock"
	"github.com/baton-go/baton/redlock"
	"github.com/baton-go/baton/sqllock"
	"github.com/baton-go/baton/zklock"
	"github.com/redis/go-redis/v9"
)

// curveClient is one baton client (one session, one keeper) of a curve
// rig.
type curveClient struct {
	mutex func(name string) (locker, error)
	close func() error
}

// curveRig is one engine for the cost curves: it makes baton clients,
// counted (through the rig's exact, client-side counter) or direct, and
// floor pairs on clients of their own.
type curveRig struct {
	engine string
	// ordered: a queue engine (ZooKeeper, etcd) grants waiters in queue
	// order and tells, through the BeforeWatch hook, when one has queued.
	// The lease engines' waiters retry or wake on a release; any may win.
	ordered bool
	// client makes a client with lease time (or session timeout) ttl;
	// shared: many waiters will share it (SQL: a small pool).
	client func(tb testing.TB, counted bool, ttl time.Duration, shared bool) curveClient
	// requests counts the counted clients' requests, pings and keepalives
	// left out; atRest counts them all. Both nil without a wire (SQLite).
	requests, atRest func() int64
	// pumps is the goroutines of the bench's counting proxies now.
	pumps func() int
	// floor makes a floor pair on a direct client and a name of its own.
	floor func(tb testing.TB) *pair
	// peer makes the peer library's side of the throughput row; nil where
	// there is none (SQL).
	peer func(tb testing.TB) *tputPeer
	// maxClients, when > 0, caps the clients of a handoff point: waiters
	// share them (a lease engine's waiter is an acquire, not a session).
	maxClients int
}

// curveEngines lists the engines of the cost curves, in report order.
var curveEngines = []string{"zk", "etcd", "redis", "redlock", "postgres", "mysql", "sqlite"}

// newCurveRig builds the rig of one engine of curveEngines.
func newCurveRig(tb testing.TB, engine string) *curveRig {
	tb.Helper()
	switch engine {
	case "zk":
		return zkCurveRig(tb)
	case "etcd":
		return etcdCurveRig(tb)
	case "redis":
		return redisCurveRig(tb)
	case "redlock":
		return redlockCurveRig(tb)
	}
	return sqlCurveRig(tb, engine)
}

func zkCurveRig(tb testing.TB) *curveRig {
	addr := zkAddr(tb)
	p := startZKFrameProxy(tb, addr)
	return &curveRig{engine: "zk", ordered: true,
		client: func(tb testing.TB, counted bool, ttl time.Duration, shared bool) curveClient {
			target := addr
			if counted {
				target = p.Addr()
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			c, err := zklock.Dial(ctx, []string{target}, zklock.Options{SessionTimeout: ttl})
			if err != nil {
				tb.Fatalf("zklock.Dial(%q) = %v", target, err)
			}
			return curveClient{mutex: func(n string) (locker, error) { return c.Mutex(n) }, close: c.Close}
		},
		requests: p.requests, atRest: p.all,
		pumps: func() int { return 2 * p.Conns() },
		floor: func(tb testing.TB) *pair { return newZKRig(tb).pair("floor") },
		peer:  zkTputPeer,
	}
}

func etcdCurveRig(tb testing.TB) *curveRig {
	rc := newRPCCounter()
	counted := etcdClient(tb, rc)
	all := func() int64 {
		var n int64
		for _, v := range rc.snapshot() {
			n += v
		}
		return n
	}
	return &curveRig{engine: "etcd", ordered: true,
		client: func(tb testing.TB, isCounted bool, ttl time.Duration, shared bool) curveClient {
			// Counted clients share one counted clientv3.Client (each
			// etcdlock client still grants a lease of its own: a session);
			// direct ones have a connection each, as processes would.
			cli := counted
			if !isCounted {
				cli = etcdClient(tb, nil)
			}
			c, err := etcdlock.New(cli, etcdlock.Options{TTL: ttl})
			if err != nil {
				tb.Fatalf("etcdlock.New = %v", err)
			}
			return curveClient{mutex: func(n string) (locker, error) { return c.Mutex(n) }, close: c.Close}
		},
		requests: rc.requests, atRest: all,
		pumps: func() int { return 0 },
		floor: func(tb testing.TB) *pair { return newEtcdRig(tb).pair("floor") },
		peer:  etcdTputPeer,
	}
}

func redisCurveRig(tb testing.TB) *curveRig {
	addr := redisAddr(tb)
	direct, _, _ := newRedisClient(tb, addr, false)
	counted, turns, _ := newRedisClient(tb, addr, true)
	prefix := redisPrefix(tb, direct, "curve")
	client := func(tb testing.TB, rdb redis.UniversalClient, ttl time.Duration) curveClient {
		c, err := redislock.New(rdb, redislock.Options{TTL: ttl, Prefix: prefix, ReplicaAckTimeout: ttl / 5})
		if err != nil {
			tb.Fatalf("redislock.New = %v", err)
		}
		return curveClient{mutex: func(n string) (locker, error) { return c.Mutex(n) }, close: c.Close}
	}
	warm := &leaseWarm{holder: func(tb testing.TB) curveClient { return client(tb, direct, benchRedisTTL) }}
	return &curveRig{engine: "redis",
		client: func(tb testing.TB, isCounted bool, ttl time.Duration, shared bool) curveClient {
			rdb := direct
			if isCounted {
				rdb = counted
			}
			c := client(tb, rdb, ttl)
			if shared {
				warm.wait(tb, c)
			}
			return c
		},
		requests: turns.Requests, atRest: turns.Turns,
		pumps: func() int { return 2 * turns.Conns() },
		peer:  redisTputPeer,
		floor: func(tb testing.TB) *pair {
			ping := func(ctx context.Context) error { return direct.Ping(ctx).Err() }
			return &pair{impl: "floor", what: "PING + PING", lock: ping, unlock: ping}
		},
	}
}

// leaseWarm makes each client of a lease engine's handoff point wait
// once, briefly, on a name another client holds, before the point is
// measured: its pub/sub connection is dialled and subscribed then, as a
// long-running process's would be. Without it 2 000 clients dialled during
// the window (the rig lets its waiters settle n ms, which that many dials
// on a loaded host outlast), and their dials, subscriptions and first
// attempts were counted as requests of the handoffs.
type leaseWarm struct {
	holder func(tb testing.TB) curveClient // a client on direct connections
	once   sync.Once
	name   string
}

func (w *leaseWarm) wait(tb testing.TB, c curveClient) {
	tb.Helper()
	w.once.Do(func() {
		h := w.holder(tb)
		tb.Cleanup(func() { _ = h.close() })
		w.name = benchName("warm")
		m, err := h.mutex(w.name)
		if err != nil {
			tb.Fatalf("Mutex(%q) = %v", w.name, err)
		}
		if _, err := m.Lock(context.Background()); err != nil {
			tb.Fatalf("Lock(%q) = %v", w.name, err)
		}
	})
	m, err := c.mutex(w.name)
	if err != nil {
		tb.Fatalf("Mutex(%q) = %v", w.name, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if l, err := m.Lock(ctx); err == nil {
		tb.Fatalf("Lock(%q) granted a held lock (token %d)", w.name, l.Token())
	}
}

func redlockCurveRig(tb testing.TB) *curveRig {
	addrs := redlockAddrs(tb)
	direct := make([]redis.UniversalClient, len(addrs))
	counted := make([]redis.UniversalClient, len(addrs))
	sum := &turnSum{}
	for i, a := range addrs {
		direct[i], _, _ = newRedisClient(tb, a, false)
		var p *turnProxy
		counted[i], p, _ = newRedisClient(tb, a, true)
		sum.ps = append(sum.ps, p)
	}
	prefix := fmt.Sprintf("baton-bench:curve-%d:", time.Now().UnixNano())
	tb.Cleanup(func() {
		for _, n := range direct {
			deletePrefix(n, prefix)
		}
	})
	pumps := func() int {
		g := 0
		for _, p := range sum.ps {
			g += 2 * p.Conns()
		}
		return g
	}
	client := func(tb testing.TB, nodes []redis.UniversalClient, ttl time.Duration) curveClient {
		c, err := redlock.New(nodes, redlock.Options{TTL: ttl, Prefix: prefix})
		if err != nil {
			tb.Fatalf("redlock.New = %v", err)
		}
		return curveClient{mutex: func(n string) (locker, error) { return c.Mutex(n) }, close: c.Close}
	}
	warm := &leaseWarm{holder: func(tb testing.TB) curveClient { return client(tb, direct, benchRedisTTL) }}
	return &curveRig{engine: "redlock",
		client: func(tb testing.TB, isCounted bool, ttl time.Duration, shared bool) curveClient {
			nodes := direct
			if isCounted {
				nodes = counted
			}
			c := client(tb, nodes, ttl)
			if shared {
				warm.wait(tb, c)
			}
			return c
		},
		requests: sum.Requests, atRest: sum.Turns, pumps: pumps, peer: redsyncTputPeer,
		floor: func(tb testing.TB) *pair {
			pingAll := func(ctx context.Context) error {
				errs := make(chan error, len(direct))
				for _, n := range direct {
					go func() { errs <- n.Ping(ctx).Err() }() // owner: pingAll, which reads every result
				}
				var first error
				for range direct {
					if err := <-errs; err != nil && first == nil {
						first = err
					}
				}
				return first
			}
			return &pair{impl: "floor", what: "PING every node + PING every node", lock: pingAll, unlock: pingAll}
		},
	}
}

// sqlCurveRig gives every client a *sql.DB of its own, as a process of
// its own would have: a client pins a renewal connection out of its pool,
// so clients sharing one capped pool starve each other. A server's
// max_connections cannot hold two thousand of them, so the handoff curve
// spreads its waiters over sqlClients clients (maxClients).
func sqlCurveRig(tb testing.TB, engine string) *curveRig {
	var be sqlBackend
	for _, b := range sqlBackends(tb.TempDir()) {
		if b.name == engine {
			be = b
		}
	}
	if be.name == "" {
		tb.Fatalf("no SQL backend %q", engine)
	}
	direct, _ := be.open(tb, false)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := sqllock.New(direct, sqllock.Options{TablePrefix: benchTablePrefix})
	if err != nil {
		tb.Fatalf("sqllock.New(%s) = %v", engine, err)
	}
	sc, _ := baton.As[*sqllock.Client](c)
	if err := sc.Migrate(ctx); err != nil {
		tb.Fatalf("Migrate(%s) = %v", engine, err)
	}
	tbl := benchTablePrefix + "locks"
	_ = c.Close()
	var mu sync.Mutex
	sum := &turnSum{}
	r := &curveRig{engine: engine, maxClients: sqlClients,
		client: func(tb testing.TB, counted bool, ttl time.Duration, shared bool) curveClient {
			db, p := be.open(tb, counted)
			if shared {
				// Many waiters share a handoff point's client: a small pool
				// keeps their attempts queued in the client rather than as
				// hundreds of transactions waiting on one row in the server
				// (the pinned renewal connection leaves three for attempts).
				db.SetMaxOpenConns(4)
				db.SetMaxIdleConns(4)
			}
			if p != nil {
				mu.Lock()
				sum.ps = append(sum.ps, p)
				mu.Unlock()
			}
			c, err := sqllock.New(db, sqllock.Options{TablePrefix: benchTablePrefix, TTL: ttl, NoMigrate: true})
			if err != nil {
				tb.Fatalf("sqllock.New(%s) = %v", engine, err)
			}
			return curveClient{mutex: func(n string) (locker, error) { return c.Mutex(n) }, close: c.Close}
		},
		pumps: func() int { return 0 },
		// A floor client has a pool of its own, as a baton client has:
		// 32 floor clients on one pool of database/sql's two idle
		// connections closed and opened a connection per statement or so
		// (a PostgreSQL backend started each time), which made the floor
		// swing from 2 000 to 7 000 lock+unlock per second.
		floor: func(tb testing.TB) *pair {
			db, _ := be.open(tb, false)
			return sqlFloorPair(tb, be, db, tbl)
		},
	}
	if be.dialect != fence.SQLite {
		turns := func() int64 {
			mu.Lock()
			defer mu.Unlock()
			return sum.Turns()
		}
		r.requests, r.atRest = turns, turns
		r.pumps = func() int {
			mu.Lock()
			defer mu.Unlock()
			g := 0
			for _, p := range sum.ps {
				g += 2 * p.Conns()
			}
			return g
		}
	}
	return r
}

// sqlClients is the most SQL clients (each a *sql.DB with its pinned
// renewal connection) a handoff point makes; waiters share them.
const sqlClients = 16
