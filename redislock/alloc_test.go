package redislock_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/batontest/heldtest"
	"github.com/baton-go/baton/batontest/testenv"
	"github.com/baton-go/baton/redislock"
)

// benchMutex is an uncontended mutex on a client of its own (benchClient).
func benchMutex(tb testing.TB, cut bool) *baton.Mutex {
	tb.Helper()
	m, err := benchClient(tb, cut).Mutex("alloc")
	if err != nil {
		tb.Fatalf("Mutex = %v", err)
	}
	return m
}

// benchClient is a client of its own; cut builds the redis client with
// ContextTimeoutEnabled.
func benchClient(tb testing.TB, cut bool) *baton.Client {
	tb.Helper()
	rdb := redisClientWith(tb, &redis.Options{Addr: testenv.Redis(tb), MaxRetries: -1, ContextTimeoutEnabled: cut})
	c, err := redislock.New(rdb, redislock.Options{TTL: 30e9, Prefix: testPrefix(tb, rdb)})
	if err != nil {
		tb.Fatalf("New = %v", err)
	}
	tb.Cleanup(func() { _ = c.Close() })
	return c
}

func lockUnlock(tb testing.TB, ctx context.Context, m *baton.Mutex) {
	l, err := m.Lock(ctx)
	if err != nil {
		tb.Fatalf("Lock = %v", err)
	}
	if err := l.Release(ctx); err != nil {
		tb.Fatalf("Release = %v", err)
	}
}

func BenchmarkMutexCut(b *testing.B)   { benchLockUnlock(b, true) }
func BenchmarkMutexNoCut(b *testing.B) { benchLockUnlock(b, false) }

func benchLockUnlock(b *testing.B, cut bool) {
	m := benchMutex(b, cut)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	lockUnlock(b, ctx, m)
	b.ReportAllocs()
	for b.Loop() {
		lockUnlock(b, ctx, m)
	}
}

// TestLockLoopStartsNoGoroutine: under a context that can end, on a redis
// client without ContextTimeoutEnabled, every Redis call runs on a
// goroutine of its own, to be left behind when the context ends (see
// call): two per lock+unlock, each started on a small stack that go-redis'
// call path grew by copying. The Client's workers keep theirs between
// calls (gopool): a loop starts almost none.
func TestLockLoopStartsNoGoroutine(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	heldtest.CheckLockLoop(t, ctx, benchMutex(t, false))
}
