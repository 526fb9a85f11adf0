package batontest_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks for leaked goroutines once the tests passed (I8). The suite's
// runs against etcdlock, its example and its negative tests live in the
// etcdlock module (etcdlock/internal/batontests), which alone requires
// etcd's client.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
