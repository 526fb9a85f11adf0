package etcdlock_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/batontest/testenv"
	"github.com/baton-go/baton/engine/queuekit"
	"github.com/baton-go/baton/etcdlock"
	"github.com/baton-go/baton/faultproxy"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/goleak"
)

// server is the etcd every test of this binary talks to: the private
// server of scripts/servers.sh (BATON_TEST_ETCD), shared with the other
// test binaries of the run, so names carry runID.
var server struct{ Endpoint string }

// runID makes this binary's lock names its own on the shared server.
var runID = func() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}()

// TestMain runs the tests against the etcd server; every goroutine a
// Client owns must be gone once the clients are closed.
func TestMain(m *testing.M) {
	server.Endpoint = testenv.EtcdMain()
	goleak.VerifyTestMain(m)
}

// rawClient returns a plain etcd client to endpoint (the server when "").
func rawClient(t *testing.T, endpoint string) *clientv3.Client {
	t.Helper()
	if endpoint == "" {
		endpoint = server.Endpoint
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatalf("clientv3.New(%q) = %v", endpoint, err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// newClient returns a baton etcd client on its own etcd client to the
// server, closed at cleanup.
func newClient(t *testing.T, opts etcdlock.Options) *etcdlock.Client {
	t.Helper()
	return newClientOn(t, rawClient(t, ""), opts)
}

func newClientOn(t *testing.T, cli *clientv3.Client, opts etcdlock.Options) *etcdlock.Client {
	t.Helper()
	if opts.TTL == 0 {
		opts.TTL = 2 * time.Second
	}
	c, err := etcdlock.NewClient(cli, opts)
	if err != nil {
		t.Fatalf("etcdlock.New = %v", err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil && !errors.Is(err, baton.ErrClosed) {
			t.Errorf("Close = %v", err)
		}
	})
	return c
}

func mutex(t *testing.T, c *etcdlock.Client, name string) *queuekit.Mutex {
	t.Helper()
	m, err := c.Mutex(name)
	if err != nil {
		t.Fatalf("Mutex(%q) = %v", name, err)
	}
	return m
}

func lock(t *testing.T, m baton.Locker, name string) *baton.Lease {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l, err := m.Lock(ctx)
	if err != nil {
		t.Fatalf("Lock(%q) = %v, want nil", name, err)
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

// leaseOf parses the lease ID out of a key "<name>/<hex>".
func leaseOf(t *testing.T, key string) clientv3.LeaseID {
	t.Helper()
	key, _, _ = strings.Cut(key, "@") // a lease's Owner() is "<key>@<create revision>"
	i := strings.LastIndexByte(key, '/')
	id, err := strconv.ParseInt(key[i+1:], 16, 64)
	if i < 0 || err != nil {
		t.Fatalf("key %q is not <name>/<lease hex>", key)
	}
	return clientv3.LeaseID(id)
}

func entries(t *testing.T, c *etcdlock.Client, name string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	keys, err := c.Entries(ctx, name)
	if err != nil {
		t.Fatalf("Entries(%q) = %v", name, err)
	}
	return keys
}

// eventually polls cond every 20ms until it holds or d passes.
func eventually(d time.Duration, cond func() bool) bool {
	end := time.Now().Add(d)
	for {
		if cond() {
			return true
		}
		if time.Now().After(end) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// uniq returns a lock name unique to the test.
func uniq(t *testing.T) string {
	return "baton-test/" + runID + "/" + strings.ReplaceAll(t.Name(), "/", "-")
}

// keyOf returns the etcd key of a grant: Owner() is "<key>@<create revision>".
func keyOf(l *baton.Lease) string {
	key, _, _ := strings.Cut(l.Owner(), "@")
	return key
}

// proxy starts a fault proxy to the server, closed at cleanup.
func proxy(t *testing.T) *faultproxy.Proxy {
	t.Helper()
	p, err := faultproxy.Start(server.Endpoint)
	if err != nil {
		t.Fatalf("faultproxy.Start = %v", err)
	}
	t.Cleanup(p.Close)
	return p
}
