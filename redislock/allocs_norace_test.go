//go:build !race

// The race detector turns sync.Pool off, so go-redis allocates its
// buffers per command and allocation counts mean nothing under it:
// scripts/test.sh runs this file's test without -race.

package redislock_test

import (
	"context"
	"testing"
)

// TestMutexAllocs bounds the allocations of an uncontended lock+unlock on a
// client built with ContextTimeoutEnabled (the whole process's, go-redis'
// included): 65 before the scripts' words were boxed once and NewLease
// stopped allocating its context's layers, 38 since; bsm/redislock's
// Obtain+Release allocates about 33 on the same client.
func TestMutexAllocs(t *testing.T) {
	m := benchMutex(t, true)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	lockUnlock(t, ctx, m)
	const ceiling = 42
	if n := testing.AllocsPerRun(200, func() { lockUnlock(t, ctx, m) }); n > ceiling {
		t.Errorf("uncontended lock+unlock: %.1f allocations, want ≤ %d", n, ceiling)
	} else {
		t.Logf("uncontended lock+unlock: %.1f allocations (≤ %d)", n, ceiling)
	}
}

// TestMutexCreateAllocs bounds the allocations of making a Mutex: a lock
// object made per request (c.Mutex(name), then Lock) pays them on every
// lock. Its spec, keys and their boxes are one block and one string
// (specBlock): 27 allocations when each was built apart, 6 since.
func TestMutexCreateAllocs(t *testing.T) {
	c := benchClient(t, true)
	const ceiling = 6
	if n := testing.AllocsPerRun(200, func() {
		if _, err := c.Mutex("order/42"); err != nil {
			t.Fatalf("Mutex = %v", err)
		}
	}); n > ceiling {
		t.Errorf("Mutex: %.1f allocations, want ≤ %d", n, ceiling)
	} else {
		t.Logf("Mutex: %.1f allocations (≤ %d)", n, ceiling)
	}
}
