package queuekit_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks for leaked goroutines once the tests passed (I8). The
// tests here run the recipes on memlock and a virtual clock; their runs
// against ZooKeeper and etcd live in the etcdlock module
// (etcdlock/internal/queuetests), which alone requires etcd's client.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
