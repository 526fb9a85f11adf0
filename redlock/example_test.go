package redlock_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/redlock"
)

// Example takes a Redlock mutex on the five test nodes and shows that the
// next grant's quorum token is larger.
func Example() {
	var nodes []redis.UniversalClient
	for _, addr := range strings.Split(os.Getenv("BATON_TEST_REDLOCK"), ",") {
		rdb := redis.NewClient(&redis.Options{Addr: addr})
		defer rdb.Close()
		nodes = append(nodes, rdb)
	}
	prefix := fmt.Sprintf("example:redlock:%d:", time.Now().UnixNano())
	defer func() { // tidy the example's keys
		for _, rdb := range nodes {
			keys, _ := rdb.Keys(context.Background(), prefix+"*").Result()
			if len(keys) > 0 {
				rdb.Del(context.Background(), keys...)
			}
		}
	}()
	c, err := redlock.New(nodes, redlock.Options{TTL: 10 * time.Second, Prefix: prefix})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	ctx := context.Background()
	// What only Redlock has is reached through baton.As: Verify reads the
	// nodes' indexes now rather than at the first acquire.
	if rc, ok := baton.As[*redlock.Client](c); ok {
		if err := rc.Verify(ctx); err != nil {
			fmt.Println(err)
			return
		}
	}
	m, err := c.Mutex("orders/42")
	if err != nil {
		fmt.Println(err)
		return
	}
	first, err := m.Lock(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	// ... pass first.Token() with every write to the resource ...
	_ = first.Release(ctx)
	second, err := m.Lock(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer second.Release(ctx)
	fmt.Println("engine:", second.Engine())
	fmt.Println("later grant has a larger token:", second.Token() > first.Token())
	// Output:
	// engine: redlock
	// later grant has a larger token: true
}
