package redislock_test

import (
	"testing"

	"github.com/baton-go/baton/batontest"
	"github.com/baton-go/baton/batontest/testenv"
)

// TestConformance runs baton's conformance suites against the engine on a
// single Redis server. The suites run side by side (each on keys of its
// own): they mostly wait for TTLs.
func TestConformance(t *testing.T) {
	t.Parallel()
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
			st.run(t, suiteEngine(t, redisAddr(t), false))
		})
	}
}

// TestConformanceCluster runs the mutex suite through go-redis's
// ClusterClient on a one-node Cluster: every script must keep to one hash
// slot, or the server refuses it.
func TestConformanceCluster(t *testing.T) {
	t.Parallel()
	batontest.TestMutex(t, suiteEngine(t, testenv.RedisCluster(t), true))
}
