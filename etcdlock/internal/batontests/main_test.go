// The batontest package's conformance suites run against etcdlock on an
// etcd cluster, with their runnable example and the negative tests that
// prove the suites catch violations. They live in the etcdlock module
// because they need etcd's client: the root module, which holds package
// batontest, must not require it (its users would get etcd's client and zap
// in their module graphs). The suites' run on the single test server is
// testkit/conformance's etcd row.
package batontest_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/baton-go/baton/batontest/testenv"
)

// etcdServer is the private etcd server of scripts/servers.sh
// (BATON_TEST_ETCD) every test of this binary talks to.
var etcdServer struct{ Endpoint string }

// TestMain runs the tests against the etcd server and checks for leaked
// goroutines.
func TestMain(m *testing.M) {
	etcdServer.Endpoint = testenv.EtcdMain()
	goleak.VerifyTestMain(m)
}
