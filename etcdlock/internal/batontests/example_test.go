package batontest_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/batontest"
	"github.com/baton-go/baton/etcdlock"
	"github.com/baton-go/baton/faultproxy"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// etcdTTL is the lease TTL of the clients under test: etcd's minimum with
// default server timing (a shorter TTL is raised to it silently).
const etcdTTL = 2 * time.Second

// etcdEngine wires etcdlock into the conformance suite, through the
// *baton.Client users hold (batontest.FromClient). Every client the suite
// asks for gets its own *clientv3.Client behind its own fault proxy, so
// Kill can partition exactly that client; admin, a client the suite never
// kills, lists the keys.
func etcdEngine(endpoint string, admin *baton.Client) batontest.Engine {
	lister, _ := baton.As[*etcdlock.Client](admin) // its raw keys are etcd's own
	return batontest.Engine{
		Name: "etcd",
		NewClient: func(t testing.TB) batontest.Client {
			p, err := faultproxy.Start(endpoint)
			if err != nil {
				t.Fatalf("faultproxy.Start(%q) = %v", endpoint, err)
			}
			t.Cleanup(p.Close)
			cli, err := clientv3.New(clientv3.Config{
				Endpoints:   []string{p.Addr},
				DialTimeout: 5 * time.Second,
				Logger:      zap.NewNop(),
			})
			if err != nil {
				t.Fatalf("clientv3.New(%q) = %v", p.Addr, err)
			}
			t.Cleanup(func() { _ = cli.Close() })
			c, err := etcdlock.New(cli, etcdlock.Options{TTL: etcdTTL})
			if err != nil {
				t.Fatalf("etcdlock.New() = %v", err)
			}
			// Kill partitions the client: its keepalives stop reaching the
			// server, which expires the lease after its TTL.
			return batontest.FromClient(c, func(t testing.TB) {
				if err := p.Blackhole(""); err != nil {
					t.Fatalf("Blackhole() = %v", err)
				}
			})
		},
		Entries: func(t testing.TB, name string) []string {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			keys, err := lister.Entries(ctx, name)
			if err != nil {
				t.Fatalf("Entries(%q) = %v", name, err)
			}
			return keys
		},
		// The server ends a lease TTL after its last keepalive, checked on
		// the lessor's 500ms tick.
		SessionTTL: etcdTTL + 500*time.Millisecond,
	}
}

// Example shows how an engine runs the conformance suite against itself:
// describe it as a batontest.Engine (above) and call batontest.TestMutex
// from one Test function of the engine's own tests:
//
//	func TestConformance(t *testing.T) {
//		admin := … // a client of the engine that is never killed
//		batontest.TestMutex(t, etcdEngine(endpoint, admin))
//	}
//
// TestEtcdCluster in this package does so on a real etcd cluster.
func Example() {
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{etcdServer.Endpoint}, Logger: zap.NewNop()})
	if err != nil {
		panic(err)
	}
	defer cli.Close()
	admin, err := etcdlock.New(cli, etcdlock.Options{TTL: etcdTTL})
	if err != nil {
		panic(err)
	}
	defer admin.Close()

	e := etcdEngine(etcdServer.Endpoint, admin)
	fmt.Printf("engine %s, sessions end %v after a partition\n", e.Name, e.SessionTTL)
	// Output: engine etcd, sessions end 2.5s after a partition
}
