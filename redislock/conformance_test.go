package redislock_test

import (
	"testing"

	"github.com/baton-go/baton/batontest"
	"github.com/baton-go/baton/batontest/testenv"
)

// TestConformanceCluster runs the mutex suite through go-redis's
// ClusterClient on a one-node Cluster: every script must keep to one hash
// slot, or the server refuses it. The suites' run on a single server is
// testkit/conformance's redis row, through baton.Open.
func TestConformanceCluster(t *testing.T) {
	t.Parallel()
	batontest.TestMutex(t, clusterEngine(t, testenv.RedisCluster(t)))
}
