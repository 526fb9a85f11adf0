package redlock_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

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
	m, err := c.Mutex("orders/42")
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
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
