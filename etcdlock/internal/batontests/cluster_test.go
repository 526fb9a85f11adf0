package batontest_test

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/baton-go/baton/batontest"
	"github.com/baton-go/baton/batontest/testenv"
	"github.com/baton-go/baton/etcdlock"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// TestEtcdCluster runs the conformance suites against etcdlock on a
// three-member etcd cluster (BATON_TEST_ETCD_CLUSTER). Each client talks
// to one member, the next client to the next one, so that holders and
// waiters sit on different members: a grant or an expiry applied by the
// leader must reach a waiter watching through a follower, and a keepalive
// sent to a follower is forwarded to the leader.
func TestEtcdCluster(t *testing.T) {
	endpoints := strings.Split(testenv.Require(t, "BATON_TEST_ETCD_CLUSTER", "etcd cluster"), ",")
	for _, st := range []struct {
		name string
		run  func(*testing.T, batontest.Engine)
	}{
		{"Mutex", batontest.TestMutex},
		{"RWMutex", batontest.TestRWMutex},
		{"Semaphore", batontest.TestSemaphore},
		{"Election", batontest.TestElection},
	} {
		t.Run(st.name, func(t *testing.T) { st.run(t, etcdClusterEngine(t, endpoints)) })
	}
}

// etcdClusterEngine is etcdEngine over several members: NewClient rotates
// over them (one endpoint per client, behind its own fault proxy), the
// admin client reads through all of them.
func etcdClusterEngine(t *testing.T, endpoints []string) batontest.Engine {
	cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatalf("clientv3.New(%q) = %v", endpoints, err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	admin, err := etcdlock.New(cli, etcdlock.Options{TTL: etcdTTL})
	if err != nil {
		t.Fatalf("etcdlock.New() = %v", err)
	}
	t.Cleanup(func() { _ = admin.Close() })
	members := make([]batontest.Engine, len(endpoints))
	for i, ep := range endpoints {
		members[i] = etcdEngine(ep, admin)
	}
	var next atomic.Uint32
	e := members[0]
	e.Name = "etcd-cluster"
	e.NewClient = func(t testing.TB) batontest.Client {
		return members[int(next.Add(1)-1)%len(members)].NewClient(t)
	}
	return e
}
