package redislock_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/batontest"
	"github.com/baton-go/baton/batontest/testenv"
	"github.com/baton-go/baton/engine"
	"github.com/baton-go/baton/faultproxy"
	"github.com/baton-go/baton/redislock"
)

// testTTL is the lease time of the tests: short, so that losses and
// expiries happen within a couple of seconds.
const testTTL = 1500 * time.Millisecond

// testPrefix returns a key prefix unique to this test; every key under it
// is deleted when the test ends (counters included).
func testPrefix(t testing.TB, rdb redis.UniversalClient) string {
	t.Helper()
	p := "batontest-" + engine.NewOwnerID()[:12]
	t.Cleanup(func() { deleteKeys(t, rdb, p) })
	return p
}

// deleteKeys removes every key under prefix (SCAN + DEL, key by key so
// that Cluster's cross-slot rule does not apply).
func deleteKeys(t testing.TB, rdb redis.UniversalClient, prefix string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	scan := func(ctx context.Context, c *redis.Client) error {
		it := c.Scan(ctx, 0, prefix+":*", 1000).Iterator()
		for it.Next(ctx) {
			if err := c.Del(ctx, it.Val()).Err(); err != nil {
				return err
			}
		}
		return it.Err()
	}
	var err error
	switch c := rdb.(type) {
	case *redis.Client:
		err = scan(ctx, c)
	case *redis.ClusterClient:
		err = c.ForEachMaster(ctx, scan)
	}
	if err != nil {
		t.Errorf("delete keys %s:* = %v", prefix, err)
	}
}

// redisClient returns a go-redis client to addr closed at the end of the
// test.
func redisClient(t testing.TB, addr string) *redis.Client {
	t.Helper()
	return redisClientWith(t, &redis.Options{Addr: addr, MaxRetries: -1})
}

// cutTimeout is the read and write timeout of the clients the tests cut
// off: a blocked read abandoned at a baton deadline ends this soon, so
// Close does not wait go-redis' default 3s for it.
const cutTimeout = time.Second

func redisClientWith(t testing.TB, o *redis.Options) *redis.Client {
	t.Helper()
	addr := o.Addr
	rdb := redis.NewClient(o)
	t.Cleanup(func() { _ = rdb.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := rdb.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING %s = %v", addr, err)
	}
	return rdb
}

// proxied returns a go-redis client reaching addr through a fault proxy of
// its own.
func proxied(t testing.TB, addr string) (*redis.Client, *faultproxy.Proxy) {
	t.Helper()
	p, err := faultproxy.Start(addr)
	if err != nil {
		t.Fatalf("faultproxy.Start(%q) = %v", addr, err)
	}
	t.Cleanup(p.Close)
	return redisClientWith(t, &redis.Options{Addr: p.Addr, MaxRetries: -1, ReadTimeout: cutTimeout, WriteTimeout: cutTimeout}), p
}

// newClient returns a baton client on rdb closed at the end of the test.
func newClient(t testing.TB, rdb redis.UniversalClient, o redislock.Options) *baton.Client {
	t.Helper()
	if o.TTL == 0 {
		o.TTL = testTTL
	}
	c, err := redislock.New(rdb, o)
	if err != nil {
		t.Fatalf("redislock.New() = %v", err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil && !errors.Is(err, baton.ErrClosed) {
			t.Errorf("Close() = %v", err)
		}
	})
	return c
}

// opCtx bounds one blocking call of a test.
func opCtx(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// lock acquires name on c or stops the test.
func lock(t testing.TB, c *baton.Client, name string) *baton.Lease {
	t.Helper()
	m, err := c.Mutex(name)
	if err != nil {
		t.Fatalf("Mutex(%q) = %v", name, err)
	}
	l, err := m.Lock(opCtx(t, 10*time.Second))
	if err != nil {
		t.Fatalf("Lock(%q) = %v, want a lease", name, err)
	}
	return l
}

// clusterEngine describes the Redis engine on the one-node Cluster at addr
// to the conformance suite: every client a one-seed ClusterClient.
func clusterEngine(t *testing.T, addr string) batontest.Engine {
	admin := clusterClient(t, addr)
	prefix := testPrefix(t, admin)
	adminC := newClient(t, admin, redislock.Options{Prefix: prefix})
	return batontest.Engine{
		Name: "redis-cluster",
		NewClient: func(t testing.TB) batontest.Client {
			p, err := faultproxy.Start(addr)
			if err != nil {
				t.Fatalf("faultproxy.Start(%q) = %v", addr, err)
			}
			t.Cleanup(p.Close)
			// The node announces its own address in CLUSTER SLOTS: map it
			// back to the proxy so that every connection is cut.
			rdb := redis.NewClusterClient(&redis.ClusterOptions{
				Addrs:        []string{p.Addr},
				MaxRetries:   -1,
				ReadTimeout:  cutTimeout,
				WriteTimeout: cutTimeout,
				ClusterSlots: func(ctx context.Context) ([]redis.ClusterSlot, error) {
					return []redis.ClusterSlot{{Start: 0, End: 16383, Nodes: []redis.ClusterNode{{Addr: p.Addr}}}}, nil
				},
			})
			t.Cleanup(func() { _ = rdb.Close() })
			c, err := redislock.New(rdb, redislock.Options{TTL: testTTL, Prefix: prefix})
			if err != nil {
				t.Fatalf("redislock.New() = %v", err)
			}
			// Kill partitions the client: renewals stop reaching the
			// server, which expires the keys after their TTL.
			return batontest.FromClient(c, func(t testing.TB) {
				if err := p.Blackhole(""); err != nil {
					t.Fatalf("Blackhole() = %v", err)
				}
			})
		},
		Entries: func(t testing.TB, name string) []string {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			es, err := redislock.Entries(ctx, adminC, name)
			if err != nil {
				t.Fatalf("Entries(%q) = %v", name, err)
			}
			return es
		},
		// A key expires TTL after its last renewal executed; Redis expires
		// keys actively within ~100ms and on access at once.
		SessionTTL: testTTL + 100*time.Millisecond,
	}
}

// rawOf returns c's own client, reached through baton.As.
func rawOf(t testing.TB, c *baton.Client) *redislock.Client {
	t.Helper()
	rc, ok := baton.As[*redislock.Client](c)
	if !ok {
		t.Fatalf("As[*redislock.Client](%s client) failed", c.Engine())
	}
	return rc
}

// keyOf returns the Redis key of a lock object (a *baton.Mutex or
// *baton.Election), reached through baton.As.
func keyOf(t testing.TB, v any) string {
	t.Helper()
	k, ok := baton.As[interface{ Key() string }](v)
	if !ok {
		t.Fatalf("As[Key](%T) failed", v)
	}
	return k.Key()
}

// mutexValue splits the value of a mutex's key ("<owner> <token> <proc>",
// " +" appended while somebody waits) into the owner and the rest; both
// are "" when the key is gone.
func mutexValue(t testing.TB, rdb redis.UniversalClient, key string) (owner, rest string) {
	t.Helper()
	v, err := rdb.Get(context.Background(), key).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		t.Fatalf("GET %s = %v", key, err)
	}
	owner, rest, _ = strings.Cut(v, " ")
	return owner, rest
}

// clusterClient returns a ClusterClient seeded with addr.
func clusterClient(t testing.TB, addr string) *redis.ClusterClient {
	t.Helper()
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{addr}})
	t.Cleanup(func() { _ = rdb.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := rdb.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING cluster %s = %v", addr, err)
	}
	return rdb
}

// redisAddr is the shared server of the tests.
func redisAddr(t testing.TB) string { return testenv.Redis(t) }
