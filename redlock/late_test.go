package redlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/baton-go/baton/batontest/testenv"
	"github.com/baton-go/baton/faultproxy"
	"github.com/baton-go/baton/redlock"
	"github.com/baton-go/baton/redlock/redlocktest"
	"github.com/redis/go-redis/v9"
)

// TestNoLateGrantOutlivesRelease: two of five nodes are slow, each chunk
// sent to them delayed by 0 to 160 ms at random, so a grant returns with
// the three fast nodes while its requests to the slow two are still on
// their way, and the release sent right after may reach a slow node first
// on another connection. No key of a released grant may stay behind: the
// lease's TTL is long, so one that did would still be listed at the end.
// Before the release waited for the acquire's requests, 20 lock+unlock
// left keys on the slow nodes, and later acquires found them held.
func TestNoLateGrantOutlivesRelease(t *testing.T) {
	addrs := testenv.Redlock(t)
	prefix := redlocktest.Prefix(t, addrs)
	admin := redlocktest.NewClient(t, addrs, prefix, redlock.Options{})
	c := redlocktest.NewProxied(t, addrs, prefix, redlock.Options{TTL: 30 * time.Second, NodeTimeout: time.Second})
	if err := raw(c).Verify(redlocktest.OpCtx(t, 5*time.Second)); err != nil {
		t.Fatalf("Verify() = %v", err)
	}
	for _, i := range []int{3, 4} {
		if err := c.Proxies[i].Latency(faultproxy.Upstream, 80*time.Millisecond, 80*time.Millisecond); err != nil {
			t.Fatalf("Latency(node %d) = %v", i, err)
		}
	}
	const name = "late/grant"
	m := redlocktest.Mutex(t, c.Client, name)
	for i := range 20 {
		l, err := m.TryLock(redlocktest.OpCtx(t, 5*time.Second))
		if err != nil {
			t.Fatalf("TryLock #%d = %v, want a lease (every earlier grant released)", i, err)
		}
		redlocktest.Release(t, l)
	}
	c.Heal()
	// Requests of the last grants still held by the latency arrive at
	// once on Heal; give them a moment to run.
	time.Sleep(300 * time.Millisecond)
	if es := entries(t, admin, name); len(es) != 0 {
		t.Errorf("entries after 20 released grants = %q, want none", es)
	}
}

// TestSlowRenewalsCount: every node answers 0.4 TTL after a request is
// sent, later than the TTL/3 between renewals, yet each renewal extends
// the key when it runs. The keeper takes such an answer until the lease's
// deadline; the store must not cut its round sooner. Cut at TTL/3, every
// round was thrown away and the holder was told Lost within one TTL,
// though every node kept its key. The nodes' script caches are emptied
// first, as a restart or a failover empties them: a renewal sent as
// EVALSHA then took two round trips (NOSCRIPT, then EVAL), 0.8 TTL, and
// the lease was Lost at its first renewal.
func TestSlowRenewalsCount(t *testing.T) {
	addrs := testenv.Redlock(t)
	prefix := redlocktest.Prefix(t, addrs)
	const ttl = 2 * time.Second
	c := redlocktest.NewProxied(t, addrs, prefix, redlock.Options{TTL: ttl})
	l, err := redlocktest.Mutex(t, c.Client, "slow/renewals").Lock(redlocktest.OpCtx(t, 5*time.Second))
	if err != nil {
		t.Fatalf("Lock = %v", err)
	}
	for _, a := range addrs {
		rdb := redis.NewClient(&redis.Options{Addr: a})
		err := rdb.ScriptFlush(redlocktest.OpCtx(t, 5*time.Second)).Err()
		_ = rdb.Close()
		if err != nil {
			t.Fatalf("SCRIPT FLUSH on %s = %v", a, err)
		}
	}
	for i := range c.Proxies {
		if err := c.Proxies[i].Latency(faultproxy.Upstream, 4*ttl/10, 0); err != nil {
			t.Fatalf("Latency(node %d) = %v", i, err)
		}
	}
	select {
	case <-l.Context().Done():
		t.Fatalf("lease Lost within %v of renewals answered 0.4 TTL late: %v", 3*ttl, context.Cause(l.Context()))
	case <-time.After(3 * ttl):
	}
	c.Heal()
	redlocktest.Release(t, l)
}
