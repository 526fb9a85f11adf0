package redislock_test

import (
	"context"
	"errors"
	"log"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/batontest/testenv"
	"github.com/baton-go/baton/fence/redisfence"
	"github.com/baton-go/baton/internal/leasetest"
	"github.com/baton-go/baton/redislock"
)

// The README's Redis quick start: your own go-redis client gives the lock
// client, a *baton.Client, the type every engine gives; the code under the
// lock is written against it. (Not run here: it needs a Redis server;
// TestQuickstart runs the same code against $BATON_TEST_REDIS.)
func Example_quickstart() {
	ctx := context.Background()
	rdb := quickstartRedis("127.0.0.1:6379")
	defer rdb.Close()
	// Your go-redis client (Sentinel, Cluster, your pool settings) serves
	// the locks too. Without one, baton.Open(ctx, "redis://127.0.0.1:6379",
	// baton.WithTTL(10*time.Second)) opens a client of its own.
	locks, err := redislock.New(rdb, redislock.Options{TTL: 10 * time.Second})
	if err != nil {
		log.Fatal(err)
	}
	defer locks.Close()
	if err := payOrder(ctx, locks, rdb, "orders/42"); err != nil {
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
// the lease's fencing token, and releases the lock. It knows nothing of
// Redis locks: on memlock, in its unit test, it runs unchanged.
func payOrder(ctx context.Context, locks *baton.Client, rdb *redis.Client, order string) error {
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

	// Run 1 on a client over rdb, as the example; run 2 on one that
	// baton.Open made from the URL: the same code on either.
	own := newClient(t, rdb, redislock.Options{TTL: 10 * time.Second})
	opened, err := baton.Open(ctx, "redis://"+rdb.Options().Addr, baton.WithTTL(10*time.Second))
	if err != nil {
		t.Fatalf("baton.Open = %v", err)
	}
	t.Cleanup(func() { _ = opened.Close() })
	var last uint64
	for run, locks := range []*baton.Client{own, opened} {
		if err := payOrder(ctx, locks, rdb, order); err != nil {
			t.Fatalf("run %d: payOrder = %v", run+1, err)
		}
		if v, err := rdb.Get(ctx, keys.Data).Result(); err != nil || v != "paid" {
			t.Fatalf("run %d: GET %s = %q, %v; want \"paid\"", run+1, keys.Data, v, err)
		}
		token, owner, err := orders.Current(ctx, order)
		if err != nil || token <= last || owner == "" {
			t.Fatalf("run %d: fence = (%d, %q), %v; want a token above %d and an owner", run+1, token, owner, err, last)
		}
		last = token
	}
	m, err := newClient(t, rdb, redislock.Options{}).Mutex(order)
	if err != nil {
		t.Fatalf("Mutex(%q) = %v", order, err)
	}
	leasetest.NextTokenAbove(t, m, last)
}
