// Package redlock_test holds redlock's fault-row tests that judge their
// histories with the drill's checkers. They live in the drill module, which
// alone may require the checkers' dependencies (porcupine); the helpers
// below are the few of redlock's own test helpers they need.
package redlock_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/internal/faultproxy"
	"github.com/baton-go/baton/redlock"
)

// testTTL is the lock keys' lease time in the tests: short, so losses and
// expiries happen within a couple of seconds, long enough for NodeTimeout
// to survive a loaded two-core machine running -race.
const testTTL = 2 * time.Second

// testNodeTimeout bounds each node request in the tests.
const testNodeTimeout = 400 * time.Millisecond

// newPrefix returns a key prefix unique to this test, and deletes every
// key under it on addrs when the test ends.
func newPrefix(t testing.TB, addrs []string) string {
	t.Helper()
	var b [6]byte
	_, _ = rand.Read(b[:])
	prefix := "batontest:redlock:" + hex.EncodeToString(b[:]) + ":"
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for _, a := range addrs {
			rdb := redis.NewClient(&redis.Options{Addr: a})
			iter := rdb.Scan(ctx, 0, prefix+"*", 1000).Iterator()
			var keys []string
			for iter.Next(ctx) {
				keys = append(keys, iter.Val())
			}
			if len(keys) > 0 {
				rdb.Del(ctx, keys...)
			}
			_ = rdb.Close()
		}
	})
	return prefix
}

// rdbs returns go-redis clients for addrs, closed at the end of the test.
// They keep go-redis' defaults (ContextTimeoutEnabled off): baton's
// per-node deadlines must hold anyway.
func rdbs(t testing.TB, addrs []string) []redis.UniversalClient {
	t.Helper()
	out := make([]redis.UniversalClient, len(addrs))
	for i, a := range addrs {
		// ReadTimeout 1s (> NodeTimeout) only shortens Close in tests.
		rdb := redis.NewClient(&redis.Options{Addr: a, MaxRetries: -1, ReadTimeout: time.Second})
		t.Cleanup(func() { _ = rdb.Close() })
		out[i] = rdb
	}
	return out
}

// proxies starts a fault proxy in front of each address, closed at the end
// of the test.
func proxies(t testing.TB, addrs []string) []*faultproxy.Proxy {
	t.Helper()
	ps := make([]*faultproxy.Proxy, len(addrs))
	for i, a := range addrs {
		p, err := faultproxy.Start(a)
		if err != nil {
			t.Fatalf("faultproxy.Start(%q) = %v", a, err)
		}
		t.Cleanup(p.Close)
		ps[i] = p
	}
	return ps
}

// proxyAddrs returns the proxies' listening addresses.
func proxyAddrs(ps []*faultproxy.Proxy) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.Addr
	}
	return out
}

// options fills the tests' defaults into o.
func options(o redlock.Options, prefix string) redlock.Options {
	if o.TTL == 0 {
		o.TTL = testTTL
	}
	if o.NodeTimeout == 0 {
		o.NodeTimeout = testNodeTimeout
	}
	o.Prefix = prefix
	return o
}

// newClient returns a client on addrs, closed at the end of the test.
func newClient(t testing.TB, addrs []string, prefix string, o redlock.Options) *redlock.Client {
	t.Helper()
	c, err := redlock.New(rdbs(t, addrs), options(o, prefix))
	if err != nil {
		t.Fatalf("redlock.New() = %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// proxied is a client whose every node is reached through a fault proxy.
type proxied struct {
	*redlock.Client
	ps []*faultproxy.Proxy
}

// newProxied returns a client on addrs through one proxy per node.
func newProxied(t testing.TB, addrs []string, prefix string, o redlock.Options) *proxied {
	t.Helper()
	ps := proxies(t, addrs)
	return &proxied{Client: newClient(t, proxyAddrs(ps), prefix, o), ps: ps}
}

// blackhole cuts the client off the nodes listed (all when none).
func (p *proxied) blackhole(t testing.TB, nodes ...int) {
	t.Helper()
	if len(nodes) == 0 {
		for i := range p.ps {
			nodes = append(nodes, i)
		}
	}
	for _, i := range nodes {
		if err := p.ps[i].Blackhole(""); err != nil {
			t.Fatalf("Blackhole(node %d) = %v", i, err)
		}
	}
}

// opCtx bounds one blocking call of a test.
func opCtx(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}

// mutex returns c's mutex called name or stops the test.
func mutex(t *testing.T, c *redlock.Client, name string) *redlock.Mutex {
	t.Helper()
	m, err := c.Mutex(name)
	if err != nil {
		t.Fatalf("Mutex(%q) = %v", name, err)
	}
	return m
}

// lock acquires name on c or stops the test.
func lock(t *testing.T, c *redlock.Client, name string) *baton.Lease {
	t.Helper()
	l, err := mutex(t, c, name).Lock(opCtx(t, 10*time.Second))
	if err != nil {
		t.Fatalf("Lock(%q) = %v, want a lease", name, err)
	}
	return l
}

// release releases l with a fresh context or reports an error.
func release(t testing.TB, l *baton.Lease) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := l.Release(ctx); err != nil {
		t.Errorf("Release(%q) = %v, want nil", l.Name(), err)
	}
}
