package redislock_test

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/baton-go/baton/batontest"
	"github.com/baton-go/baton/batontest/testenv"
	"github.com/baton-go/baton/faultproxy"
	"github.com/baton-go/baton/redislock"
)

// TestConformanceSentinel runs the conformance suites through go-redis's
// failover client (redis.NewFailoverClient) on a primary and replica
// watched by three Sentinels (BATON_TEST_SENTINEL, quorum 2): the client
// asks the Sentinels for the primary and follows it, as production
// deployments of a single primary do.
func TestConformanceSentinel(t *testing.T) {
	t.Parallel()
	sentinels, master := sentinelEnv(t)
	for _, st := range []struct {
		name string
		run  func(*testing.T, batontest.Engine)
	}{
		{"Mutex", batontest.TestMutex},
		{"RWMutex", batontest.TestRWMutex},
		{"Semaphore", batontest.TestSemaphore},
		{"Election", batontest.TestElection},
	} {
		t.Run(st.name, func(t *testing.T) {
			t.Parallel()
			st.run(t, sentinelEngine(t, sentinels, master))
		})
	}
}

// sentinelEnv returns the Sentinels' addresses and the master name they
// watch.
func sentinelEnv(t testing.TB) ([]string, string) {
	s := testenv.Require(t, "BATON_TEST_SENTINEL", "Redis Sentinels")
	return strings.Split(s, ","), testenv.Require(t, "BATON_TEST_SENTINEL_MASTER", "Redis Sentinel master name")
}

// failoverClient returns a go-redis failover client of master closed at
// the end of the test; dial, if not nil, dials every connection (to the
// Sentinels and to the servers).
func failoverClient(t testing.TB, sentinels []string, master string, dial func(context.Context, string, string) (net.Conn, error)) *redis.Client {
	t.Helper()
	rdb := redis.NewFailoverClient(&redis.FailoverOptions{
		MasterName:    master,
		SentinelAddrs: sentinels,
		Dialer:        dial,
		MaxRetries:    -1,
		ReadTimeout:   cutTimeout,
		WriteTimeout:  cutTimeout,
	})
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// sentinelEngine describes the Redis engine behind the Sentinels to the
// conformance suite. Every client dials through fault proxies of its own
// (one per address it reaches), so Kill cuts exactly that client.
func sentinelEngine(t *testing.T, sentinels []string, master string) batontest.Engine {
	admin := failoverClient(t, sentinels, master, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := admin.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING through Sentinels %v = %v", sentinels, err)
	}
	prefix := testPrefix(t, admin)
	adminC := newClient(t, admin, redislock.Options{Prefix: prefix})
	return batontest.Engine{
		Name: "redis-sentinel",
		NewClient: func(t testing.TB) batontest.Client {
			cut := &cutDialer{proxies: map[string]*faultproxy.Proxy{}}
			t.Cleanup(cut.close)
			rdb := failoverClient(t, sentinels, master, cut.dial)
			c, err := redislock.New(rdb, redislock.Options{TTL: testTTL, Prefix: prefix})
			if err != nil {
				t.Fatalf("redislock.New() = %v", err)
			}
			return batontest.FromClient(c, cut.kill)
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
		SessionTTL: testTTL + 100*time.Millisecond,
	}
}

// cutDialer dials each address through a fault proxy of its own, started
// on first use; once killed, every proxy drops every byte, those started
// later included.
type cutDialer struct {
	mu      sync.Mutex
	proxies map[string]*faultproxy.Proxy
	killed  bool
}

func (d *cutDialer) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	p, err := d.proxy(addr)
	if err != nil {
		return nil, err
	}
	var nd net.Dialer
	return nd.DialContext(ctx, network, p.Addr)
}

func (d *cutDialer) proxy(addr string) (*faultproxy.Proxy, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if p, ok := d.proxies[addr]; ok {
		return p, nil
	}
	p, err := faultproxy.Start(addr)
	if err != nil {
		return nil, err
	}
	if d.killed {
		if err := p.Blackhole(""); err != nil {
			p.Close()
			return nil, err
		}
	}
	d.proxies[addr] = p
	return p, nil
}

func (d *cutDialer) kill(t testing.TB) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.killed = true
	for addr, p := range d.proxies {
		if err := p.Blackhole(""); err != nil {
			t.Fatalf("Blackhole(%s) = %v", addr, err)
		}
	}
}

// close stops the proxies; it runs after the client closed (cleanups run
// last-registered first).
func (d *cutDialer) close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, p := range d.proxies {
		p.Close()
	}
}
