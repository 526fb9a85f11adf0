package batontest_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/baton-go/baton/internal/etcdtest"
	"go.uber.org/goleak"
)

// etcdServer is the one embedded etcd member of this test binary.
var etcdServer *etcdtest.Server

// TestMain starts the embedded etcd server, runs the tests, stops the
// server and then fails the binary if any goroutine outlived its owner
// (fault matrix I8).
func TestMain(m *testing.M) {
	srv, err := etcdtest.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, "batontest: start embedded etcd:", err)
		os.Exit(1)
	}
	etcdServer = srv
	code := m.Run()
	srv.Close()
	if code == 0 {
		if err := leaks(); err != nil {
			fmt.Fprintln(os.Stderr, "batontest: goroutine leak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// leaks looks for goroutines left behind; goleak retries for a while so
// that goroutines on their stop path (a closed gRPC connection, a stopped
// proxy) can finish.
func leaks() error {
	return goleak.Find()
}
