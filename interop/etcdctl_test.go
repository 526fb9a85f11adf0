package interop_test

import (
	"context"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/baton-go/baton/batontest/testenv"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// etcdctlEntry is the last segment of `etcdctl lock`'s key NAME/<lease ID
// in hex>; baton's keys must look the same or the two would not see each
// other's.
var etcdctlEntry = regexp.MustCompile(`^[0-9a-f]{1,16}$`)

// etcdServer returns the private etcd server of scripts/servers.sh
// (Debian's etcd-server, the release etcdctl comes with) and a plain client
// to inspect the keys from outside both lock clients. Lock names are unique
// per test (lockName), so the shared server needs no cleaning.
func etcdServer(t *testing.T) server {
	t.Helper()
	endpoint := testenv.Etcd(t)
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   []string{endpoint},
		DialTimeout: 5 * time.Second,
		Logger:      zap.NewNop(),
	})
	if err != nil {
		t.Fatalf("clientv3.New(%q) = %v", endpoint, err)
	}
	t.Cleanup(func() { cli.Close() })
	return server{
		engine:  "etcd",
		backend: "etcd://" + endpoint,
		entry:   etcdctlEntry,
		queue: func(t *testing.T, name string) []string {
			t.Helper()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			resp, err := cli.Get(ctx, name+"/", clientv3.WithPrefix(), clientv3.WithKeysOnly(),
				clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend))
			if err != nil {
				t.Fatalf("Get(%q, prefix) = %v", name+"/", err)
			}
			var keys []string
			for _, kv := range resp.Kvs {
				keys = append(keys, strings.TrimPrefix(string(kv.Key), name+"/"))
			}
			return keys
		},
	}
}

// TestEtcdctlAndBatonMutex checks that `baton run` and `etcdctl lock` on
// the same etcd name exclude each other in both start orders and under
// contention.
func TestEtcdctlAndBatonMutex(t *testing.T) {
	needBaton(t)
	etcdctl := testenv.Binary(t, "etcdctl")
	srv := etcdServer(t)
	endpoint := strings.TrimPrefix(srv.backend, "etcd://")
	etcdctlSide := func(who string) side {
		return side{who: who, env: []string{"ETCDCTL_API=3"}, argv: func(name, dir, who, hold string, n int) []string {
			argv := []string{etcdctl, "--endpoints=" + endpoint, "lock", name, "--",
				"sh", criticalSh, dir, who, hold, "mutex"}
			if n == 1 {
				return argv
			}
			return loop(n, argv...)
		}}
	}

	bat := func(who string) side { return batonSide(srv.backend, who, "mutex") }

	t.Run("EtcdctlFirst", func(t *testing.T) {
		ordered(t, srv, etcdctlSide("etcdctl"), bat("baton"))
	})
	t.Run("BatonFirst", func(t *testing.T) {
		ordered(t, srv, bat("baton"), etcdctlSide("etcdctl"))
	})
	t.Run("Interleaved", func(t *testing.T) {
		interleaved(t, srv, 5, "0.05",
			etcdctlSide("etcdctl-1"), etcdctlSide("etcdctl-2"), bat("baton-1"), bat("baton-2"))
	})
}

// TestEtcdctlAndBatonElect checks `baton elect NAME` against
// `etcdctl elect NAME PROPOSAL` (testdata/etcdctl-elect.sh) on one etcd:
// one leader at a time, in both start orders, and leadership passes to the
// other client's candidate when the leader resigns.
func TestEtcdctlAndBatonElect(t *testing.T) {
	needBaton(t)
	etcdctl := testenv.Binary(t, "etcdctl")
	srv := etcdServer(t)
	endpoint := strings.TrimPrefix(srv.backend, "etcd://")
	elect, err := filepath.Abs(filepath.Join("testdata", "etcdctl-elect.sh"))
	if err != nil {
		t.Fatal(err)
	}
	etcdctlSide := func(who string) side {
		return side{who: who, env: []string{"ETCDCTL_API=3"}, argv: func(name, dir, who, hold string, n int) []string {
			argv := []string{"sh", elect, etcdctl, endpoint, name, dir, who, hold}
			if n == 1 {
				return argv
			}
			return loop(n, argv...)
		}}
	}
	bat := func(who string) side { return batonSide(srv.backend, who, "leader") }

	t.Run("EtcdctlFirst", func(t *testing.T) {
		ordered(t, srv, etcdctlSide("etcdctl"), bat("baton"))
	})
	t.Run("BatonFirst", func(t *testing.T) {
		ordered(t, srv, bat("baton"), etcdctlSide("etcdctl"))
	})
	t.Run("Interleaved", func(t *testing.T) {
		interleaved(t, srv, 3, "0.05",
			etcdctlSide("etcdctl-1"), etcdctlSide("etcdctl-2"), bat("baton-1"), bat("baton-2"))
	})
}
