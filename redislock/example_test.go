package redislock_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/engine/leasekit"
	"github.com/baton-go/baton/redislock"
)

// A mutex on a single Redis primary: New gives the *baton.Client every
// engine gives. (Not run: it needs a Redis server.)
func ExampleNew() {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379", ReadTimeout: time.Second})
	defer rdb.Close()
	c, err := redislock.New(rdb, redislock.Options{TTL: 10 * time.Second})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	m, err := c.Mutex("orders/42")
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	lease, err := m.Lock(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer lease.Release(context.Background())
	// Do the work under lease.Context(), and pass lease.Token() to the
	// resource so that it rejects a late writer.
	fmt.Println("token", lease.Token())
	// What only Redis has is reached through baton.As: the lock's key.
	if k, ok := baton.As[interface{ Key() string }](m); ok {
		fmt.Println("held in", k.Key())
	}
}

// A read/write lock: readers share, a waiting writer keeps new readers
// out. (Not run: it needs a Redis server.)
func ExampleNew_rwMutex() {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	defer rdb.Close()
	c, err := redislock.New(rdb, redislock.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	rw, _ := c.RWMutex("catalog")
	r, err := rw.RLock(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	defer r.Release(context.Background())
}

// A semaphore of 3 permits; a dead holder's permit expires and comes
// back. A client told of permits held under another N reaches the
// semaphore's OnDisagreement through baton.As. (Not run: it needs a Redis
// server.)
func ExampleNew_semaphore() {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	defer rdb.Close()
	c, err := redislock.New(rdb, redislock.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	s, _ := c.Semaphore("exports", 3)
	if on, ok := baton.As[interface {
		OnDisagreement(func(leasekit.Disagreement))
	}](s); ok {
		on.OnDisagreement(func(d leasekit.Disagreement) { log.Print(d) })
	}
	p, err := s.Acquire(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	defer p.Release(context.Background())
}

// Leader election with an epoch. (Not run: it needs a Redis server.)
func ExampleNew_election() {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	defer rdb.Close()
	c, err := redislock.New(rdb, redislock.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	e, _ := c.Election("scheduler")
	ld, err := e.Campaign(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("leading with epoch", ld.Epoch())
	_ = ld.Resign(context.Background(), baton.ResignPlan{})
}

// Replica acknowledgement: a grant that did not reach a replica is
// released and the acquire fails. (Not run: it needs a primary with a
// replica.)
func ExampleOptions_replicaAcks() {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	defer rdb.Close()
	c, err := redislock.New(rdb, redislock.Options{ReplicaAcks: 1, ReplicaAckTimeout: 200 * time.Millisecond})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	m, _ := c.Mutex("orders/42")
	_, err = m.TryLock(context.Background())
	if errors.Is(err, redislock.ErrNotReplicated) {
		log.Print("not replicated; released: ", err)
	}
}

// After a failover rewound the counters, re-base them above the highest
// token the resource has accepted. (Not run.)
func ExampleOptions_tokenFloor() {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	defer rdb.Close()
	highest := uint64(123456) // e.g. from redisfence.Fence.Current
	c, err := redislock.New(rdb, redislock.Options{TokenFloor: highest + 1})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
}

// The keeper's counters of a client, reached through baton.As. (Not
// run: it needs a Redis server.)
func ExampleClient() {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	defer rdb.Close()
	c, err := redislock.New(rdb, redislock.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	if rc, ok := baton.As[*redislock.Client](c); ok {
		fmt.Printf("prefix %s, TTL %v, renewal rounds %d\n", rc.Prefix(), rc.TTL(), rc.Stats().Rounds)
	}
}
