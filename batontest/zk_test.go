package batontest_test

import (
	"context"
	"testing"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/batontest"
	"github.com/baton-go/baton/batontest/testenv"
	"github.com/baton-go/baton/faultproxy"
	"github.com/baton-go/baton/zklock"
)

// zkSessionTimeout is the session timeout of the clients under test. The
// private test server has tickTime 200ms and a 400ms minimum, so 1s is
// granted as asked.
const zkSessionTimeout = time.Second

// TestZK runs the conformance suite against zklock on the private
// ZooKeeper server, each client dialling through its own fault proxy.
func TestZK(t *testing.T) { batontest.TestMutex(t, zkEngine(t)) }

// TestZKRWMutex, TestZKSemaphore and TestZKElection run the recipe suites
// against zklock.
func TestZKRWMutex(t *testing.T)   { batontest.TestRWMutex(t, zkEngine(t)) }
func TestZKSemaphore(t *testing.T) { batontest.TestSemaphore(t, zkEngine(t)) }
func TestZKElection(t *testing.T)  { batontest.TestElection(t, zkEngine(t)) }

// zkEngine describes zklock on the private test server to the suite.
func zkEngine(t *testing.T) batontest.Engine {
	addr := testenv.ZK(t)
	admin := dialZK(t, addr)
	entries := func(t testing.TB, name string) []string {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		es, err := admin.Entries(ctx, name)
		if err != nil {
			t.Fatalf("Entries(%q) = %v", name, err)
		}
		return es
	}
	return batontest.Engine{
		Name: "zk",
		NewClient: func(t testing.TB) batontest.Client {
			p, err := faultproxy.Start(addr)
			if err != nil {
				t.Fatalf("faultproxy.Start(%q) = %v", addr, err)
			}
			t.Cleanup(p.Close)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			c, err := zklock.Dial(ctx, []string{p.Addr}, zklock.Options{SessionTimeout: zkSessionTimeout})
			if err != nil {
				t.Fatalf("zklock.Dial(%q) = %v", p.Addr, err)
			}
			return &zkClient{Client: c, proxy: p}
		},
		Entries: entries,
		// Curator's semaphore layout: the guard mutex's entries under
		// "<name>/locks", the permits under "<name>/leases"; the two
		// container directories themselves are not entries.
		SemaphoreEntries: func(t testing.TB, name string) []string {
			var es []string
			for _, sub := range []string{"locks", "leases"} {
				for _, e := range entries(t, name+"/"+sub) {
					es = append(es, sub+"/"+e)
				}
			}
			return es
		},
		// The server expires a session a session timeout after it last
		// heard from it, in buckets of one tickTime (200ms).
		SessionTTL: zkSessionTimeout + 200*time.Millisecond,
	}
}

// dialZK dials a client that is never killed, closed at the end of t.
func dialZK(t *testing.T, addr string) *zklock.Client {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	c, err := zklock.Dial(ctx, []string{addr}, zklock.Options{SessionTimeout: 10 * time.Second})
	if err != nil {
		t.Fatalf("zklock.Dial(%q) = %v", addr, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// zkClient adapts *zklock.Client to batontest.Client.
type zkClient struct {
	*zklock.Client
	proxy *faultproxy.Proxy
}

func (c *zkClient) Mutex(name string) (baton.Locker, error) {
	return batontest.As[baton.Locker](c.Client.Mutex(name))
}

// Kill partitions the client: the server stops hearing its pings and
// expires the session after the session timeout; the client hears nothing.
func (c *zkClient) Kill(t testing.TB) {
	if err := c.proxy.Blackhole(""); err != nil {
		t.Fatalf("Blackhole() = %v", err)
	}
}

func (c *zkClient) RWMutex(name string) (batontest.RW, error) {
	return batontest.As[batontest.RW](c.Client.RWMutex(name))
}

func (c *zkClient) Semaphore(name string, n int) (batontest.Sem, error) {
	return batontest.As[batontest.Sem](c.Client.Semaphore(name, n))
}

func (c *zkClient) Election(name string) (batontest.Elect, error) {
	return electOf(c.Client.Election(name))
}
