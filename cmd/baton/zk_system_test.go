package main_test

import (
	"strings"
	"testing"

	"github.com/baton-go/baton/batontest/testenv"
)

// TestZKSystemTreeName: without a chroot, a lock name in ZooKeeper's own
// /zookeeper tree is a usage error (64), and so is a chroot there.
func TestZKSystemTreeName(t *testing.T) {
	zk := "zk://" + testenv.ZK(t)
	for _, args := range [][]string{
		{"run", "--backend", zk, "zookeeper/quota", "--", "true"},
		{"run", "--backend", zk + "/zookeeper", "x", "--", "true"},
	} {
		r := runBaton(t, nil, args...)
		if r.code != 64 || !strings.Contains(r.stderr, "ZooKeeper's own /zookeeper tree") {
			t.Errorf("baton %s: exit %d, stderr %q; want 64 naming ZooKeeper's own /zookeeper tree", strings.Join(args, " "), r.code, r.stderr)
		}
	}
}
