package drill_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/batontest/testenv"
	"github.com/baton-go/baton/drill"
	"github.com/baton-go/baton/drill/drilltest"
	batonengine "github.com/baton-go/baton/engine"
	"github.com/baton-go/baton/faultproxy"
	"github.com/baton-go/baton/redislock"
	"github.com/baton-go/baton/redlock"
)

// The Redis lease engines: "redis", package redislock on the shared
// BATON_TEST_REDIS server, and "redlock", package redlock on the five
// independent BATON_TEST_REDLOCK nodes. Both keep the holder's lease on
// keys renewed by package keeper; a redislock waiter is woken by the
// release's PUBLISH (and backs off), a Redlock waiter only backs off.
//
// Each engine instance writes under a key prefix of its own, deleted when
// its test ends: the servers are shared with every other test. The holder
// child process learns the prefix from the engine's endpoint,
// "<prefix>@<addr>[,<addr>…]".

// redisTTL is the lease time of the Redis drills, as the SQL engines'.
const redisTTL = 2 * time.Second

// redlockNodeTimeout bounds each Redlock node request: far below the TTL,
// far above a loopback round trip on a loaded two-core machine under
// -race (the redlock package's own tests use the same).
const redlockNodeTimeout = 400 * time.Millisecond

// redisIOTimeout is go-redis' read and write timeout on the drills'
// connections: a read blocked on a cut link ends this soon, so the
// goroutines baton abandons at a deadline (see redislock's "Deadlines")
// end well within the drills' settle times.
const redisIOTimeout = time.Second

// go-redis logs every dial a drill refuses; the drills judge the errors
// Lock returns instead.
func init() { redis.SetLogger(quietRedis{}) }

type quietRedis struct{}

func (quietRedis) Printf(context.Context, string, ...any) {}

// redisEngines lists the Redis lease engines.
func redisEngines() []leaseEngine {
	return []leaseEngine{{"redis", redisEngine, false}, {"redlock", redlockEngine, false}}
}

// faultGroup is the fault proxies of a client that reaches several
// servers (one per Redlock node): every fault applies to all of them, as
// a partition of the client does.
type faultGroup []*faultproxy.Proxy

func (g faultGroup) each(f func(*faultproxy.Proxy) error) error {
	var errs []error
	for _, p := range g {
		errs = append(errs, f(p))
	}
	return errors.Join(errs...)
}

func (g faultGroup) Blackhole(dir faultproxy.Direction) error {
	return g.each(func(p *faultproxy.Proxy) error { return p.Blackhole(dir) })
}

func (g faultGroup) Latency(dir faultproxy.Direction, d, jitter time.Duration) error {
	return g.each(func(p *faultproxy.Proxy) error { return p.Latency(dir, d, jitter) })
}

func (g faultGroup) CutAfter(dir faultproxy.Direction, n int64) error {
	return g.each(func(p *faultproxy.Proxy) error { return p.CutAfter(dir, n) })
}

func (g faultGroup) Heal()   { _ = g.each(func(p *faultproxy.Proxy) error { p.Heal(); return nil }) }
func (g faultGroup) Refuse() { _ = g.each(func(p *faultproxy.Proxy) error { p.Refuse(); return nil }) }
func (g faultGroup) Accept() error {
	return g.each(func(p *faultproxy.Proxy) error { return p.Accept() })
}
func (g faultGroup) Close() { _ = g.each(func(p *faultproxy.Proxy) error { p.Close(); return nil }) }

// redisEndpoint and splitRedisEndpoint encode a Redis engine's prefix and
// servers for the holder child.
func redisEndpoint(prefix string, addrs ...string) string {
	return prefix + "@" + strings.Join(addrs, ",")
}

func splitRedisEndpoint(endpoint string) (prefix string, addrs []string) {
	prefix, list, _ := strings.Cut(endpoint, "@")
	return prefix, strings.Split(list, ",")
}

// newRedis returns a go-redis client to addr as the drills configure it:
// no retries (a resent acquire is the row 1 question, not go-redis'),
// short I/O timeouts (see redisIOTimeout).
func newRedis(addr string, pool int) *redis.Client {
	o := &redis.Options{Addr: addr, MaxRetries: -1, ReadTimeout: redisIOTimeout, WriteTimeout: redisIOTimeout}
	if pool > 1 {
		o.PoolSize = pool
	}
	return redis.NewClient(o)
}

// dropKeys deletes every key matching pattern on rdb (the test's prefix).
func dropKeys(t *testing.T, rdb *redis.Client, pattern string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	it := rdb.Scan(ctx, 0, pattern, 1000).Iterator()
	var keys []string
	for it.Next(ctx) {
		keys = append(keys, it.Val())
	}
	if err := it.Err(); err != nil {
		t.Errorf("SCAN %s = %v", pattern, err)
		return
	}
	for _, k := range keys {
		if err := rdb.Del(ctx, k).Err(); err != nil {
			t.Errorf("DEL %s = %v", k, err)
			return
		}
	}
}

func lockerOf[M baton.Locker](f func(string) (M, error)) func(string) (baton.Locker, error) {
	return func(name string) (baton.Locker, error) {
		m, err := f(name)
		if err != nil {
			return nil, err // not a typed nil inside the interface
		}
		return m, nil
	}
}

// closeOK is Close that does not count an earlier Close as an error.
func closeOK(f func() error) func() error {
	return func() error {
		err := f()
		if errors.Is(err, baton.ErrClosed) {
			err = nil
		}
		return err
	}
}

// redisEngine is package redislock on BATON_TEST_REDIS.
func redisEngine(t *testing.T) *engine {
	addr := testenv.Redis(t)
	prefix := "batondrill-" + batonengine.NewOwnerID()[:12]
	admin := newRedis(addr, 0)
	// Registered first, so it runs last: after every client is closed.
	t.Cleanup(func() { dropKeys(t, admin, prefix+":*"); admin.Close() })
	e := &engine{
		name: "redis", family: leaseFamily, ttl: redisTTL, endpoint: redisEndpoint(prefix, addr), network: true,
		recipes: []recipe{mutexRecipe},
		// Entries lists "recipe/role/owner" (holders, then waiting intents).
		owns: func(entry, owner string) bool { return entry == "mutex/holder/"+owner },
	}
	e.open = func(t *testing.T, o clientOpts) *lockClient {
		t.Helper()
		if o.share != nil {
			return o.share
		}
		lc := &lockClient{lease: true}
		server := addr
		if o.upstream != "" {
			server = o.upstream
		}
		if o.proxied {
			// client → fault proxy → byte counter → server: the counter
			// measures the herd's attempts (row 9).
			counter := startByteCounter(t, server)
			p, err := faultproxy.Start(counter.addr)
			if err != nil {
				t.Fatalf("faultproxy.Start(%q) = %v", counter.addr, err)
			}
			t.Cleanup(p.Close)
			lc.proxy, lc.bytes, server = p, counter, p.Addr
		}
		rdb := newRedis(server, o.pool)
		t.Cleanup(func() { rdb.Close() })
		ttl := redisTTL
		if o.ttl > 0 {
			ttl = o.ttl
		}
		c, err := redislock.New(rdb, redislock.Options{TTL: ttl, Prefix: prefix})
		if err != nil {
			t.Fatalf("redislock.New = %v", err)
		}
		t.Cleanup(func() { c.Close() })
		if err := warmRedis(c); err != nil {
			t.Fatalf("redis: %v", err)
		}
		lc.mutex, lc.entries = lockerOf(c.Mutex), redisScan(c, rdb)
		lc.close = closeOK(c.Close)
		return lc
	}
	scanner, err := redislock.New(admin, redislock.Options{TTL: redisTTL, Prefix: prefix})
	if err != nil {
		t.Fatalf("redislock.New = %v", err)
	}
	t.Cleanup(func() { scanner.Close() })
	e.scan = redisScan(scanner, admin)
	return e
}

// warmRedis loads the scripts a drill's first requests run (so that a
// fault on "the next request" hits the request, not a NOSCRIPT reload
// before it) and starts the client's pub/sub goroutine, which a client
// runs from its first wait until Close: a row that counts baton's
// goroutines around one call must not see it start inside that call.
func warmRedis(c *baton.Client) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := redisEntries(c)(ctx, "drill/warm"); err != nil {
		return fmt.Errorf("Inspect = %w", err)
	}
	m, err := c.Mutex("drill/warm/" + batonengine.NewOwnerID()[:12])
	if err != nil {
		return err
	}
	l, err := m.TryLock(ctx)
	if err != nil {
		return fmt.Errorf("warming TryLock = %w", err)
	}
	wctx, wcancel := context.WithTimeout(ctx, 50*time.Millisecond)
	_, werr := m.Lock(wctx) // waits (its lease is not in wctx): starts the pub/sub goroutine
	wcancel()
	if !errors.Is(werr, context.DeadlineExceeded) {
		return fmt.Errorf("warming Lock while held = %v, want context.DeadlineExceeded", werr)
	}
	if err := l.Release(ctx); err != nil {
		return fmt.Errorf("warming Release = %w", err)
	}
	return nil
}

// redisEntries lists the holders and waiting intents of a name as c
// inspects them, "<recipe>/holder/<owner>" and "<recipe>/waiting/<waiter>",
// holders first.
func redisEntries(c *baton.Client) func(context.Context, string) ([]string, error) {
	return func(ctx context.Context, name string) ([]string, error) {
		in, err := c.Inspect(ctx, name)
		if err != nil {
			return nil, err
		}
		es := make([]string, 0, len(in.Holders)+len(in.Waiters))
		for _, e := range in.Holders {
			es = append(es, e.Mode+"/holder/"+e.Owner)
		}
		for _, e := range in.Waiters {
			es = append(es, e.Mode+"/waiting/"+e.Owner)
		}
		return es, nil
	}
}

// redisScan is the orphan scan of a redislock client: the name's holders
// and waiting intents, and any key of the name that has no expiry (a key
// that would block or leak forever).
func redisScan(c *baton.Client, rdb *redis.Client) func(context.Context, string) ([]string, error) {
	entries := redisEntries(c)
	return func(ctx context.Context, name string) ([]string, error) {
		es, err := entries(ctx, name)
		if err != nil {
			return nil, err
		}
		m, err := c.Mutex(name)
		if err != nil {
			return nil, err
		}
		k, ok := baton.As[interface{ Key() string }](m)
		if !ok {
			return nil, fmt.Errorf("%s mutex has no Key", c.Engine())
		}
		keys := []string{k.Key(), k.Key() + ":waiters"}
		pipe := rdb.Pipeline()
		ttls := make([]*redis.DurationCmd, len(keys))
		for i, k := range keys {
			ttls[i] = pipe.PTTL(ctx, k)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return nil, err
		}
		for i, k := range keys {
			if ttls[i].Val() == -1 { // exists without an expiry (-2: absent)
				es = append(es, "key/"+k+"/no-expiry")
			}
		}
		return es, nil
	}
}

// redlockEngine is package redlock on the five BATON_TEST_REDLOCK nodes; a
// proxied client reaches each node through a fault proxy of its own, and
// a fault applies to all of them (faultGroup).
func redlockEngine(t *testing.T) *engine {
	addrs := testenv.Redlock(t)
	prefix := "batondrill:redlock:" + batonengine.NewOwnerID()[:12] + ":"
	admins := make([]*redis.Client, len(addrs))
	for i, a := range addrs {
		admins[i] = newRedis(a, 0)
	}
	t.Cleanup(func() {
		for _, a := range admins {
			dropKeys(t, a, prefix+"*")
			a.Close()
		}
	})
	e := &engine{
		name: "redlock", family: leaseFamily, ttl: redisTTL, endpoint: redisEndpoint(prefix, addrs...), network: true,
		recipes: []recipe{mutexRecipe},
		// Entries are "<owner>@<on how many nodes>": one per grant.
		owns:        func(entry, owner string) bool { return strings.HasPrefix(entry, owner+"@") },
		nodeTimeout: redlockNodeTimeout,
	}
	e.open = func(t *testing.T, o clientOpts) *lockClient {
		t.Helper()
		if o.share != nil {
			return o.share
		}
		lc := &lockClient{lease: true}
		var group faultGroup
		nodes := make([]redis.UniversalClient, len(addrs))
		for i, a := range addrs {
			server := a
			if o.proxied {
				if i == 0 {
					// Every attempt goes to every node at once: node 0's
					// traffic counts the attempts (row 9).
					counter := startByteCounter(t, server)
					lc.bytes, server = counter, counter.addr
				}
				p, err := faultproxy.Start(server)
				if err != nil {
					t.Fatalf("faultproxy.Start(%q) = %v", server, err)
				}
				t.Cleanup(p.Close)
				group, server = append(group, p), p.Addr
			}
			rdb := newRedis(server, o.pool)
			t.Cleanup(func() { rdb.Close() })
			nodes[i] = rdb
		}
		if o.proxied {
			lc.proxy = group
		}
		ttl := redisTTL
		if o.ttl > 0 {
			ttl = o.ttl
		}
		c, err := redlock.New(nodes, redlock.Options{TTL: ttl, Prefix: prefix, NodeTimeout: redlockNodeTimeout})
		if err != nil {
			t.Fatalf("redlock.New = %v", err)
		}
		t.Cleanup(func() { c.Close() })
		if err := warmRedlock(c); err != nil {
			t.Fatalf("redlock: %v", err)
		}
		lc.mutex, lc.entries = lockerOf(c.Mutex), redlockScan(c)
		lc.close = closeOK(c.Close)
		return lc
	}
	nodes := make([]redis.UniversalClient, len(admins))
	for i, a := range admins {
		nodes[i] = a
	}
	scanner, err := redlock.New(nodes, redlock.Options{TTL: redisTTL, Prefix: prefix, NodeTimeout: redlockNodeTimeout})
	if err != nil {
		t.Fatalf("redlock.New = %v", err)
	}
	t.Cleanup(func() { scanner.Close() })
	e.scan = redlockScan(scanner)
	return e
}

// warmRedlock verifies the node indexes (a client's first use) and loads
// the scripts of an acquire, a release and an inspection.
func warmRedlock(c *baton.Client) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := verifyRedlock(ctx, c); err != nil {
		return fmt.Errorf("Verify = %w", err)
	}
	if _, err := redlockScan(c)(ctx, "drill/warm"); err != nil {
		return fmt.Errorf("Inspect = %w", err)
	}
	m, err := c.Mutex("drill/warm/" + batonengine.NewOwnerID()[:12])
	if err != nil {
		return err
	}
	l, err := m.TryLock(ctx)
	if err != nil {
		return fmt.Errorf("warming TryLock = %w", err)
	}
	if err := l.Release(ctx); err != nil {
		return fmt.Errorf("warming Release = %w", err)
	}
	return nil
}

// verifyRedlock reads the nodes' indexes of a Redlock client (its
// Verify, reached through baton.As).
func verifyRedlock(ctx context.Context, c *baton.Client) error {
	rc, ok := baton.As[*redlock.Client](c)
	if !ok {
		return fmt.Errorf("%s client is not a Redlock client", c.Engine())
	}
	return rc.Verify(ctx)
}

// redlockScan is the orphan scan of a Redlock client: one entry per owner
// holding the name's key on any node, as the client inspects them,
// "<owner>@<note>" (the note says on how many of the nodes). It fails
// when a node does not answer.
func redlockScan(c *baton.Client) func(context.Context, string) ([]string, error) {
	return func(ctx context.Context, name string) ([]string, error) {
		in, err := c.Inspect(ctx, name)
		if err != nil {
			return nil, err
		}
		if len(in.Notes) > 0 { // the nodes that did not answer
			return nil, fmt.Errorf("redlock: inspect %q: %s", name, strings.Join(in.Notes, "; "))
		}
		var out []string
		for _, e := range slices.Concat(in.Holders, in.Other) {
			out = append(out, e.Owner+"@"+e.Note)
		}
		slices.Sort(out)
		return out, nil
	}
}

// dialRedisChild opens a Redis engine's client in a holder child process,
// straight to the servers of endpoint.
func dialRedisChild(ctx context.Context, engine, endpoint string) (*lockClient, error) {
	prefix, addrs := splitRedisEndpoint(endpoint)
	var rdbs []*redis.Client
	for _, a := range addrs {
		rdbs = append(rdbs, newRedis(a, 0))
	}
	closeAll := func() {
		for _, r := range rdbs {
			r.Close()
		}
	}
	lc := &lockClient{lease: true}
	switch engine {
	case "redis":
		c, err := redislock.New(rdbs[0], redislock.Options{TTL: redisTTL, Prefix: prefix})
		if err != nil {
			closeAll()
			return nil, err
		}
		if _, err := redisEntries(c)(ctx, "drill/warm"); err != nil {
			c.Close()
			closeAll()
			return nil, err
		}
		lc.mutex, lc.entries = lockerOf(c.Mutex), redisEntries(c)
		lc.close = func() error { err := c.Close(); closeAll(); return err }
	case "redlock":
		nodes := make([]redis.UniversalClient, len(rdbs))
		for i, r := range rdbs {
			nodes[i] = r
		}
		c, err := redlock.New(nodes, redlock.Options{TTL: redisTTL, Prefix: prefix, NodeTimeout: redlockNodeTimeout})
		if err != nil {
			closeAll()
			return nil, err
		}
		if err := verifyRedlock(ctx, c); err != nil {
			c.Close()
			closeAll()
			return nil, err
		}
		lc.mutex, lc.entries = lockerOf(c.Mutex), redlockScan(c)
		lc.close = func() error { err := c.Close(); closeAll(); return err }
	default:
		closeAll()
		return nil, fmt.Errorf("unknown engine %q", engine)
	}
	return lc, nil
}

// TestRow04RedlockMinority is row 4's partition on Redlock, cut from a
// minority of the nodes only: the holder's link to nodes 0 and 1 (of 5)
// holds every byte for 2×TTL. Its keys there expire, but every extension
// still reaches a majority, so nothing may change: the holder is never
// told Lost and stays Held, the waiter — which can win only the two
// expired nodes — is not granted, the holder's commit is accepted and its
// release (confirmed by the majority) lets the waiter in with a larger
// token. Nothing breaks exclusion, so the unfenced control stays green.
func TestRow04RedlockMinority(t *testing.T) {
	e := redlockEngine(t)
	trials(t, e, 1, minorityPartition)
}

func minorityPartition(t *testing.T, e *engine, seed uint64) {
	run := drilltest.Start(t, seed)
	name := lockName("row04minority", e, seed)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sc := setScene(t, ctx, run, e, mutexRecipe, name, clientOpts{proxied: true}, clientOpts{}, nil)
	g, ok := sc.old.lc.proxy.(faultGroup)
	if !ok || len(g) != 5 {
		t.Fatalf("old holder's link is %T, want the fault proxies of 5 nodes", sc.old.lc.proxy)
	}
	minority := g[:2]
	run.Rec.Fault("old", "partition from nodes 0 and 1, both ways") // healed by the proxies' close (see row 8)
	faultAt := drill.Now()
	if err := minority.Latency("", partitionHold, 0); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * e.ttl)
	if ev, ok := stateEvent(run.Rec.Events(), "old", "lost"); ok {
		t.Errorf("old holder told Lost %v into a partition from a minority of the nodes: the majority still extends its keys", time.Duration(ev.T-faultAt))
	}
	if st := sc.og.lease.State(); st != baton.Held {
		t.Errorf("old holder's lease is %v 2×TTL into a minority partition, want held", st)
	}
	es, err := e.scan(ctx, name)
	if err != nil {
		t.Fatalf("Entries = %v", err)
	}
	t.Logf("2×TTL into the partition the nodes hold %v", es)
	if n := ownEntries(e, es, sc.og.lease.Owner()); n != 1 {
		t.Errorf("old holder's key is on no node (%v), want on the majority", es)
	}
	select {
	case r := <-sc.got:
		t.Fatalf("waiter's acquire returned (err %v) while the old holder keeps a majority of the nodes", r.err)
	default:
	}
	if ferr, uerr := sc.commit(ctx); ferr != nil || uerr != nil {
		t.Errorf("old holder's commit = %v, %v; want accepted (it holds)", ferr, uerr)
	}
	sc.st.end(ctx, run.Rec, sc.old.id, sc.og)
	if err := sc.old.release(ctx, sc.og); err != nil {
		t.Errorf("old holder's release through the majority = %v, want nil", err)
	}
	r := sc.awaitNext(t, 2*e.ttl, "after the old holder released")
	if r.g.lease.Token() <= sc.og.lease.Token() {
		t.Errorf("new holder's token %d, want > the old holder's %d (I2)", r.g.lease.Token(), sc.og.lease.Token())
	}
	sc.nextWorks(t, ctx, r.g)
	sc.st.check(t, run, false)
	sc.st.checkHolders(run, sc.next.name)
	run.Report(drill.CheckTokens(run.Rec.Events()))
	sc.st.orphans(ctx, run, sc.next, 2*e.ttl)
}
