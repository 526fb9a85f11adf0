package redislock_test

import (
	"context"
	"errors"
	"log"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/baton-go/baton/batontest/testenv"
	"github.com/baton-go/baton/fence/redisfence"
	"github.com/baton-go/baton/internal/leasetest"
	"github.com/baton-go/baton/redislock"
)

// The README's Redis quick start: connect with your own go-redis client,
// take a lock, write under its fencing token, release. (Not run here:
// it needs a Redis server; TestQuickstart runs the same code against
// $BATON_TEST_REDIS.)
func Example_quickstart() {
	ctx := context.Background()
	rdb := quickstartRedis("127.0.0.1:6379")
	defer rdb.Close()
	if err := payOrder(ctx, rdb, "orders/42"); err != nil {
		log.Fatal(err)
	}
}

// quickstartRedis is the go-redis client with the settings baton needs
// (see the package doc, "Deadlines: a go-redis trap").
func quickstartRedis(addr string) *redis.Client {
	return redis.NewClient(&redis.Options{
		Addr:                  addr,
		ContextTimeoutEnabled: true,        // go-redis cuts a blocked read at the context deadline
		ReadTimeout:           time.Second, // well below the TTL: a stuck renewal fails fast
		MaxRetries:            -1,          // baton retries; a resent permit or read-lock script takes a second grant
	})
}

// payOrder takes the order's lock, marks the order paid in Redis under
// the lease's fencing token, and releases the lock.
func payOrder(ctx context.Context, rdb *redis.Client, order string) error {
	locks, err := redislock.New(rdb, redislock.Options{TTL: 10 * time.Second})
	if err != nil {
		return err
	}
	defer locks.Close()
	m, err := locks.Mutex(order)
	if err != nil {
		return err
	}
	lease, err := m.Lock(ctx)
	if err != nil {
		return err
	}
	// The write carries the token. A lost lease cancels lease.Context(),
	// which stops the write; a holder that has not noticed yet (paused,
	// cut off) and writes late is refused with baton.ErrStaleToken.
	orders := redisfence.Fence{Client: rdb, Prefix: "app:"} // keys app:{orders/42}, app:{orders/42}:fence
	err = orders.Set(lease.Context(), order, lease.Token(), lease.Owner(), "paid", nil)
	return errors.Join(err, lease.Release(context.Background()))
}

// TestQuickstart runs the quick start's code against the test server, on
// an order of its own, twice: each run writes "paid" under a larger token
// (the fence holds the last one) and releases the lock, so that a TryLock
// right after gets it.
func TestQuickstart(t *testing.T) {
	rdb := quickstartRedis(testenv.Redis(t))
	order := uniqueName(t.Name())
	orders := redisfence.Fence{Client: rdb, Prefix: "app:"}
	keys := orders.Keys(order)
	t.Cleanup(func() {
		_ = rdb.Del(context.Background(), keys.Data, keys.Fence).Err()
		_ = rdb.Close()
	})
	ctx := opCtx(t, 20*time.Second)

	var last uint64
	for run := 1; run <= 2; run++ {
		if err := payOrder(ctx, rdb, order); err != nil {
			t.Fatalf("run %d: payOrder = %v", run, err)
		}
		if v, err := rdb.Get(ctx, keys.Data).Result(); err != nil || v != "paid" {
			t.Fatalf("run %d: GET %s = %q, %v; want \"paid\"", run, keys.Data, v, err)
		}
		token, owner, err := orders.Current(ctx, order)
		if err != nil || token <= last || owner == "" {
			t.Fatalf("run %d: fence = (%d, %q), %v; want a token above %d and an owner", run, token, owner, err, last)
		}
		last = token
	}
	m, err := newClient(t, rdb, redislock.Options{}).Mutex(order)
	if err != nil {
		t.Fatalf("Mutex(%q) = %v", order, err)
	}
	leasetest.NextTokenAbove(t, m, last)
}
