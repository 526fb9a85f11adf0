//go:build !race

package bench_test

import (
	"context"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/batontest/testenv"
	"github.com/baton-go/baton/engine"
	_ "github.com/baton-go/baton/etcdlock"
	_ "github.com/baton-go/baton/kubelock"
	_ "github.com/baton-go/baton/redislock"
	_ "github.com/baton-go/baton/redlock"
	_ "github.com/baton-go/baton/sqllock"
	_ "github.com/baton-go/baton/sqllock/sqlite"
	_ "github.com/baton-go/baton/zklock"
)

// openURL is the test server of engine eng as a baton.Open URL.
func openURL(tb testing.TB, eng string) string {
	switch eng {
	case "zk":
		return "zk://" + testenv.ZK(tb)
	case "etcd":
		return "etcd://" + testenv.Etcd(tb)
	case "redis":
		return "redis://" + testenv.Redis(tb)
	case "redlock":
		// A prefix of its own: each node's token counter is per prefix.
		return "redlock://" + strings.Join(testenv.Redlock(tb), ",") + "?prefix=allocguard-" + engine.NewOwnerID()[:12]
	case "postgres":
		return testenv.Postgres(tb)
	case "kube":
		return "k8s://?kubeconfig=" + url.QueryEscape(testenv.K8s(tb))
	case "mysql":
		return "mysql://" + strings.NewReplacer("tcp(", "", ")", "").Replace(testenv.MySQL(tb))
	}
	return "sqlite://" + filepath.Join(tb.TempDir(), "locks.db")
}

// TestAllocGuardOneAPI holds the one API to the engines' own ceilings: a
// lock+unlock through baton.Open's *baton.Client and its *baton.Mutex
// allocates no more than the engine's own client does (allocGuards).
func TestAllocGuardOneAPI(t *testing.T) {
	for _, g := range allocGuards {
		t.Run(g.engine, func(t *testing.T) {
			ctx := context.Background()
			c, err := baton.Open(ctx, openURL(t, g.engine))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = c.Close() })
			// A name of its own per run, so that its token counter starts
			// at zero: go-redis boxes a script's integer results, and Go
			// boxes integers below 256 without allocating, so on a
			// counter past 255 Redis and Redlock count one allocation
			// more (the engines' own rigs start from zero too).
			m, err := c.Mutex("bench/allocguard-open/" + g.engine + "-" + engine.NewOwnerID()[:12])
			if err != nil {
				t.Fatal(err)
			}
			var held *baton.Lease
			p := &pair{impl: "baton", what: "baton.Open " + g.engine,
				lock:   func(ctx context.Context) (err error) { held, err = m.Lock(ctx); return err },
				unlock: func(ctx context.Context) error { return held.Release(ctx) },
			}
			n := allocsPerOp(t, p)
			if n > g.ceiling {
				t.Errorf("%s through baton.Open: %.0f allocations per uncontended lock+unlock, want ≤ %.0f (the engine's own client's ceiling)", g.engine, n, g.ceiling)
			} else {
				t.Logf("%s through baton.Open: %.0f allocations per uncontended lock+unlock (≤ %.0f)", g.engine, n, g.ceiling)
			}
		})
	}
}
