package redlock_test

import (
	"context"
	"testing"

	"github.com/baton-go/baton/batontest/heldtest"
	"github.com/baton-go/baton/batontest/testenv"
	"github.com/baton-go/baton/redlock"
	"github.com/baton-go/baton/redlock/redlocktest"
)

// BenchmarkMutex is an uncontended lock+unlock over every node, for its
// allocations and its goroutines per op (the process's, every node's
// client included).
func BenchmarkMutex(b *testing.B) {
	addrs := testenv.Redlock(b)
	c := redlocktest.NewClient(b, addrs, redlocktest.Prefix(b, addrs), redlock.Options{})
	m, err := c.Mutex("alloc")
	if err != nil {
		b.Fatalf("Mutex = %v", err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		l, err := m.Lock(ctx)
		if err != nil {
			b.Fatalf("Lock = %v", err)
		}
		if err := l.Release(ctx); err != nil {
			b.Fatalf("Release = %v", err)
		}
	}
}

// TestLockLoopStartsNoGoroutine: every node request runs on a goroutine of
// its own, ten per uncontended lock+unlock on five nodes (and one more to
// settle the nodes the round did not wait for); each started on a small
// stack that go-redis' call path grew by copying, 15 % of the client's
// CPU. The Client's workers keep theirs between rounds (gopool): a loop
// starts almost none.
func TestLockLoopStartsNoGoroutine(t *testing.T) {
	addrs := testenv.Redlock(t)
	c := redlocktest.NewClient(t, addrs, redlocktest.Prefix(t, addrs), redlock.Options{})
	heldtest.CheckLockLoop(t, context.Background(), redlocktest.Mutex(t, c, "loop"))
}
