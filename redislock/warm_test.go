package redislock_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/redislock"
)

// TestRenewalsOnWarmConn: renewals go on a connection the client keeps for
// them, so a pool whose other connections are all busy (here with blocked
// BLPOPs) does not hold them up. Taking their turn in the pool, renewals
// waited behind the caller's requests, or dialled beside them through a
// slow link, past the lease's deadline: a false Lost.
func TestRenewalsOnWarmConn(t *testing.T) {
	t.Parallel()
	rdb := redisClientWith(t, &redis.Options{Addr: redisAddr(t), MaxRetries: -1, PoolSize: 3, PoolTimeout: 10 * time.Second})
	prefix := testPrefix(t, rdb)
	const ttl = time.Second
	c := newClient(t, rdb, redislock.Options{Prefix: prefix, TTL: ttl})
	l := lock(t, c, uniqueName("warm"))
	deadline := time.Now().Add(5 * time.Second)
	for st := rdb.PoolStats(); st.TotalConns-st.IdleConns != 1; st = rdb.PoolStats() {
		if time.Now().After(deadline) {
			t.Fatalf("no connection pinned for renewals: pool %+v, want one in use", *st)
		}
		time.Sleep(5 * time.Millisecond)
	}
	// Every other connection of the pool blocks for 3 TTLs.
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = rdb.BLPop(context.Background(), 3*ttl, prefix+"-nothing-"+string(rune('a'+i))).Err()
		}()
	}
	defer wg.Wait()
	time.Sleep(100 * time.Millisecond) // the BLPOPs have their connections
	before := rawOf(t, c).Stats()
	time.Sleep(2 * ttl)
	after := rawOf(t, c).Stats()
	if st := l.State(); st != baton.Held {
		t.Fatalf("lease %v (%v) while the pool was busy, want %v", st, l.Err(), baton.Held)
	}
	if after.Suspended != before.Suspended || after.Rounds-before.Rounds < 4 {
		t.Errorf("over 2 TTLs with the pool busy: %d rounds, %d suspensions; want ≥ 4 rounds, none suspended",
			after.Rounds-before.Rounds, after.Suspended-before.Suspended)
	}
}

// TestWarmConnShared: the Clients of one go-redis client share one warm
// connection. Each pinning its own, 2 000 Clients on one pool (the
// benchmark's handoff curve) left their requests no connection: pool
// timeouts.
func TestWarmConnShared(t *testing.T) {
	t.Parallel()
	rdb := redisClientWith(t, &redis.Options{Addr: redisAddr(t), MaxRetries: -1, PoolSize: 4, PoolTimeout: time.Second})
	prefix := testPrefix(t, rdb)
	var leases []*baton.Lease
	for i := range 6 {
		c := newClient(t, rdb, redislock.Options{Prefix: prefix})
		leases = append(leases, lock(t, c, uniqueName(fmt.Sprintf("shared-%d", i))))
	}
	time.Sleep(200 * time.Millisecond) // the pin goroutines have ended
	if st := rdb.PoolStats(); st.TotalConns-st.IdleConns != 1 {
		t.Errorf("%d connections in use with 6 Clients holding leases, want the one warm connection they share (pool %+v)", st.TotalConns-st.IdleConns, *st)
	}
	time.Sleep(testTTL) // renewals of every Client
	for _, l := range leases {
		if st := l.State(); st != baton.Held {
			t.Errorf("lease %s %v (%v), want %v", l.Name(), st, l.Err(), baton.Held)
		}
		if err := l.Release(opCtx(t, 5*time.Second)); err != nil {
			t.Errorf("Release(%s) = %v", l.Name(), err)
		}
	}
}
