// Package redlocktest holds the helpers of the tests that run Redlock
// against the five test nodes: unique key prefixes cleaned up afterwards,
// clients with the tests' short lease times, and clients reached through
// one fault proxy a node. Package redlock's tests and the drill's Redlock
// fault rows (which live in the drill module for its checkers) share them:
// so it lives beside package redlock, public, as the root module requires
// no other baton module that could hold it (docs/design/modules.md).
package redlocktest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/faultproxy"
	"github.com/baton-go/baton/redlock"
)

// TTL is the lock keys' lease time in the tests: short, so losses and
// expiries happen within a couple of seconds, long enough for NodeTimeout
// to survive a loaded two-core machine running -race.
const TTL = 2 * time.Second

// NodeTimeout bounds each node request in the tests.
const NodeTimeout = 400 * time.Millisecond

// Prefix returns a key prefix unique to this test, and deletes every
// key under it on addrs when the test ends.
func Prefix(t testing.TB, addrs []string) string {
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

// Clients returns go-redis clients for addrs, closed at the end of the test.
// They keep go-redis' defaults (ContextTimeoutEnabled off): baton's
// per-node deadlines must hold anyway.
func Clients(t testing.TB, addrs []string) []redis.UniversalClient {
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

// Proxies starts a fault proxy in front of each address, closed at the end
// of the test.
func Proxies(t testing.TB, addrs []string) []*faultproxy.Proxy {
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

// ProxyAddrs returns the proxies' listening addresses.
func ProxyAddrs(ps []*faultproxy.Proxy) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.Addr
	}
	return out
}

// Options fills the tests' defaults into o.
func Options(o redlock.Options, prefix string) redlock.Options {
	if o.TTL == 0 {
		o.TTL = TTL
	}
	if o.NodeTimeout == 0 {
		o.NodeTimeout = NodeTimeout
	}
	o.Prefix = prefix
	return o
}

// NewClient returns a client on addrs, closed at the end of the test.
// baton.As reaches its *redlock.Client (Verify, Stats).
func NewClient(t testing.TB, addrs []string, prefix string, o redlock.Options) *baton.Client {
	t.Helper()
	c, err := redlock.New(Clients(t, addrs), Options(o, prefix))
	if err != nil {
		t.Fatalf("redlock.New() = %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// Proxied is a client whose every node is reached through a fault proxy.
type Proxied struct {
	*baton.Client
	Proxies []*faultproxy.Proxy // one a node, in the order of the addresses
}

// NewProxied returns a client on addrs through one proxy per node.
func NewProxied(t testing.TB, addrs []string, prefix string, o redlock.Options) *Proxied {
	t.Helper()
	ps := Proxies(t, addrs)
	return &Proxied{Client: NewClient(t, ProxyAddrs(ps), prefix, o), Proxies: ps}
}

// Blackhole cuts the client off the nodes listed (all when none).
func (p *Proxied) Blackhole(t testing.TB, nodes ...int) {
	t.Helper()
	if len(nodes) == 0 {
		for i := range p.Proxies {
			nodes = append(nodes, i)
		}
	}
	for _, i := range nodes {
		if err := p.Proxies[i].Blackhole(""); err != nil {
			t.Fatalf("Blackhole(node %d) = %v", i, err)
		}
	}
}

// Heal removes every fault.
func (p *Proxied) Heal() {
	for _, px := range p.Proxies {
		px.Heal()
	}
}

// OpCtx bounds one blocking call of a test.
func OpCtx(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}

// Mutex returns c's mutex called name or stops the test.
func Mutex(t *testing.T, c *baton.Client, name string) *baton.Mutex {
	t.Helper()
	m, err := c.Mutex(name)
	if err != nil {
		t.Fatalf("Mutex(%q) = %v", name, err)
	}
	return m
}

// Lock acquires name on c or stops the test.
func Lock(t *testing.T, c *baton.Client, name string) *baton.Lease {
	t.Helper()
	l, err := Mutex(t, c, name).Lock(OpCtx(t, 10*time.Second))
	if err != nil {
		t.Fatalf("Lock(%q) = %v, want a lease", name, err)
	}
	return l
}

// Release releases l with a fresh context or reports an error.
func Release(t testing.TB, l *baton.Lease) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := l.Release(ctx); err != nil {
		t.Errorf("Release(%q) = %v, want nil", l.Name(), err)
	}
}
