package baton_test

import (
	"context"
	"fmt"
	"os"

	"github.com/baton-go/baton"
	_ "github.com/baton-go/baton/memlock" // mem://; in production: redislock, sqllock, zklock, …
)

// Open an engine by URL, take a lock, fence with its token, and see who
// holds it. The same code runs on redis://, postgres://, zk://, etcd://…
// once their engines are imported; mem:// is the in-process engine for
// unit tests.
func ExampleOpen() {
	ctx := context.Background()
	c, err := baton.Open(ctx, "mem://example", baton.WithLabel("team", "payments"))
	if err != nil {
		panic(err)
	}
	defer c.Close()

	m, err := c.Mutex("orders/42")
	if err != nil {
		panic(err)
	}
	lease, err := m.Lock(ctx)
	if err != nil {
		panic(err)
	}
	// Write to the resource with lease.Token(), under lease.Context():
	// a fenced resource refuses a holder whose token is stale.
	fmt.Println("token > 0:", lease.Token() > 0)

	in, err := c.Inspect(ctx, "orders/42")
	if err != nil {
		panic(err)
	}
	h := in.Holders[0]
	fmt.Println("held by this process:", h.PID == os.Getpid(), "team:", h.Labels["team"])

	if err := lease.Release(ctx); err != nil {
		panic(err)
	}
	// Output:
	// token > 0: true
	// held by this process: true team: payments
}
