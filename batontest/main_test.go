package batontest_test

import (
	"testing"

	"github.com/baton-go/baton/internal/etcdtest"
)

// etcdServer is the one embedded etcd member of this test binary.
var etcdServer *etcdtest.Server

// TestMain runs the tests beside one embedded etcd and checks for leaked
// goroutines (I8).
func TestMain(m *testing.M) { etcdtest.Main(m, &etcdServer) }
