// The queue package's tests, run against both queue engines (ZooKeeper
// and etcd). They live in the etcdlock module because they need etcd's
// client: the root module, which holds package queuekit, must not require it
// (its users would get etcd's client and zap in their module graphs).
package queue_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/batontest/testenv"
	"github.com/baton-go/baton/etcdlock"
	"github.com/baton-go/baton/faultproxy"
	"github.com/baton-go/baton/zklock"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/goleak"
	"go.uber.org/zap"
)

// etcdServer and ZooKeeper are the private servers of scripts/servers.sh
// (BATON_TEST_ETCD, BATON_TEST_ZK).
var etcdServer struct{ Endpoint string }

// TestMain runs the tests against the etcd server and checks for leaked
// goroutines (I8).
func TestMain(m *testing.M) {
	etcdServer.Endpoint = testenv.EtcdMain()
	goleak.VerifyTestMain(m)
}

// client is what the recipe tests need of an engine's client: the
// *baton.Client both engines give, whose raw entries (entries) are each
// engine's own, reached through baton.As.
type client interface {
	RWMutex(name string) (*baton.RWMutex, error)
	Semaphore(name string, n int) (*baton.Semaphore, error)
	Election(name string) (*baton.Election, error)
	Close() error
}

// entries lists c's raw entries under name: *zklock.Client's and
// *etcdlock.Client's Entries.
func entries(ctx context.Context, c client, name string) ([]string, error) {
	lister, ok := baton.As[interface {
		Entries(ctx context.Context, name string) ([]string, error)
	}](c)
	if !ok {
		return nil, errors.New("the engine's client lists no entries")
	}
	return lister.Entries(ctx, name)
}

// engine describes one queue engine under test.
type engine struct {
	name string
	// upstream returns the server address a fault proxy forwards to.
	upstream func(t *testing.T) string
	// dial returns a new client with sessions of its own, talking to addr
	// (the server when ""), closed at the end of the test.
	dial func(t *testing.T, addr string) client
}

// sessionTTL is the session timeout / lease TTL of every client under
// test: short so that loss and expiry take about two seconds.
const sessionTTL = 2 * time.Second

var engines = []engine{
	{
		name:     "zk",
		upstream: func(t *testing.T) string { return testenv.ZK(t) },
		dial: func(t *testing.T, addr string) client {
			t.Helper()
			if addr == "" {
				addr = testenv.ZK(t)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			c, err := zklock.Dial(ctx, []string{addr}, zklock.Options{SessionTimeout: sessionTTL})
			if err != nil {
				t.Fatalf("zklock.Dial(%s) = %v", addr, err)
			}
			t.Cleanup(func() { _ = c.Close() })
			return c
		},
	},
	{
		name:     "etcd",
		upstream: func(*testing.T) string { return etcdServer.Endpoint },
		dial: func(t *testing.T, addr string) client {
			t.Helper()
			if addr == "" {
				addr = etcdServer.Endpoint
			}
			cli, err := clientv3.New(clientv3.Config{Endpoints: []string{addr}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
			if err != nil {
				t.Fatalf("clientv3.New(%q) = %v", addr, err)
			}
			t.Cleanup(func() { _ = cli.Close() })
			c, err := etcdlock.New(cli, etcdlock.Options{TTL: sessionTTL})
			if err != nil {
				t.Fatalf("etcdlock.New = %v", err)
			}
			t.Cleanup(func() { _ = c.Close() })
			return c
		},
	},
}

// forEach runs test once per engine.
func forEach(t *testing.T, test func(t *testing.T, e engine)) {
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) { test(t, e) })
	}
}

// uniq returns a name no other test or run uses.
func uniq(t *testing.T) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return "baton-test/queue/" + strings.ReplaceAll(t.Name(), "/", "-") + "/" + hex.EncodeToString(b[:])
}

func proxy(t *testing.T, e engine) *faultproxy.Proxy {
	t.Helper()
	p, err := faultproxy.Start(e.upstream(t))
	if err != nil {
		t.Fatalf("faultproxy.Start = %v", err)
	}
	t.Cleanup(p.Close)
	return p
}

type result struct {
	l   *baton.Lease
	err error
}

// start runs acquire on a goroutine owned by the test: it returns when
// acquire does, at the latest when its 20s context ends or the client is
// closed at cleanup.
func start(acquire func(context.Context) (*baton.Lease, error)) <-chan result {
	out := make(chan result, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		l, err := acquire(ctx)
		out <- result{l, err}
	}()
	return out
}

// granted waits for an acquire started with start and fails the test
// unless it succeeded within 10s.
func granted(t *testing.T, ch <-chan result, what string) *baton.Lease {
	t.Helper()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatalf("%s = %v, want a grant", what, r.err)
		}
		return r.l
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: not granted within 10s", what)
	}
	return nil
}

// waiting asserts that an acquire started with start is still waiting
// after d.
func waiting(t *testing.T, ch <-chan result, d time.Duration, what string) {
	t.Helper()
	select {
	case r := <-ch:
		t.Fatalf("%s returned (%v, %v) while it should wait", what, r.l != nil, r.err)
	case <-time.After(d):
	}
}

func acquire(t *testing.T, f func(context.Context) (*baton.Lease, error), what string) *baton.Lease {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l, err := f(ctx)
	if err != nil {
		t.Fatalf("%s = %v, want a grant", what, err)
	}
	return l
}

func release(t *testing.T, l *baton.Lease) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := l.Release(ctx); err != nil {
		t.Fatalf("Release(%q) = %v, want nil", l.Name(), err)
	}
}

// notAcquired asserts that f (a TryLock) fails with baton.ErrNotAcquired.
func notAcquired(t *testing.T, f func(context.Context) (*baton.Lease, error), what string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l, err := f(ctx)
	if !errors.Is(err, baton.ErrNotAcquired) {
		if l != nil {
			_ = l.Release(ctx)
		}
		t.Fatalf("%s = (%v, %v), want ErrNotAcquired", what, l != nil, err)
	}
}

// waitEntries polls c's raw entries under name until there are n.
func waitEntries(t *testing.T, c client, name string, n int) {
	t.Helper()
	var got []string
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		var err error
		got, err = entries(ctx, c, name)
		cancel()
		if err != nil {
			t.Fatalf("Entries(%q) = %v", name, err)
		}
		if len(got) == n {
			return
		}
	}
	t.Fatalf("Entries(%q) = %q, want %d entries", name, got, n)
}

func rwmutex(t *testing.T, c client, name string) *baton.RWMutex {
	t.Helper()
	rw, err := c.RWMutex(name)
	if err != nil {
		t.Fatalf("RWMutex(%q) = %v", name, err)
	}
	return rw
}

func semaphore(t *testing.T, c client, name string, n int) *baton.Semaphore {
	t.Helper()
	s, err := c.Semaphore(name, n)
	if err != nil {
		t.Fatalf("Semaphore(%q, %d) = %v", name, n, err)
	}
	return s
}

func election(t *testing.T, c client, name string) *baton.Election {
	t.Helper()
	el, err := c.Election(name)
	if err != nil {
		t.Fatalf("Election(%q) = %v", name, err)
	}
	return el
}
