package redisfence_test

import (
	"context"
	"errors"
	"log"

	"github.com/redis/go-redis/v9"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/fence/redisfence"
)

// A fenced SET: the value is written only when the token passes the fence.
// (Not run: it needs a Redis server.) In a real program token and owner
// come from the lease: lease.Token(), lease.Owner().
func ExampleFence_Set() {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	defer rdb.Close()

	f := redisfence.Fence{Client: rdb, Prefix: "app:"} // keys app:{export-88}, app:{export-88}:fence
	if err := f.Set(ctx, "export-88", 702, "B", "export-88/702.out", nil); err != nil {
		log.Fatal(err)
	}
	err := f.Set(ctx, "export-88", 701, "A", "export-88/701.out", nil)
	if errors.Is(err, baton.ErrStaleToken) {
		log.Print("A lost the lock; its write was refused: ", err)
	}
}
