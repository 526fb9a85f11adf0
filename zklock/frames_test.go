package zklock_test

import (
	"errors"
	"testing"

	"github.com/baton-go/baton/batontest/testenv"
	"github.com/baton-go/baton/batontest/zkframes"
	"github.com/baton-go/baton/zklock"
	"github.com/go-zookeeper/zk"
)

// ZooKeeper opcodes of the requests counted below.
const (
	opCreate          = 1
	opDelete          = 2
	opGetChildren2    = 12
	opMulti           = 14
	opCreateContainer = 19
)

// TestReapedDirOneRequest: when the server has reaped a lock's container
// directory (it does once the last entry is gone) but not its parents, the
// next acquire re-creates the directory alone: create (NoNode), one
// createContainer, create, getChildren; then the release's delete (a plain
// one: nobody waited behind, so the multi of ReleaseFirst is not sent). Making
// every level from the top sent a createContainer per level, each a write
// the server logs even when it answers NodeExists.
func TestReapedDirOneRequest(t *testing.T) {
	f := zkframes.Start(t, testenv.ZK(t))
	c := dial(t, f.Addr, zklock.Options{})
	name := lockName(t) + "/deep/er/still"
	m := mutex(t, c, name)
	release(t, lock(t, m))
	dir, err := c.Dir(name)
	if err != nil {
		t.Fatal(err)
	}
	// What the server's container reaper does, at once.
	if err := c.Conn().Delete(dir, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
		t.Fatalf("Delete(%s) = %v", dir, err)
	}
	f.Take()
	release(t, lock(t, m))
	ops := f.Take()
	want := map[int32]int{opCreate: 2, opCreateContainer: 1, opGetChildren2: 1, opDelete: 1, opMulti: 0}
	for op, n := range want {
		if ops[op] != n {
			t.Errorf("opcode %d: %d requests, want %d (all: %v)", op, ops[op], n, ops)
		}
	}
}
