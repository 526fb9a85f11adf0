package redislock

import (
	"context"

	"github.com/baton-go/baton/internal/rediseval"
	"github.com/redis/go-redis/v9"
)

// evalsha runs sc on the client's server (see rediseval.Run).
func (c *Client) evalsha(ctx context.Context, sc rediseval.Script, keys []string, boxed []any, args ...any) *redis.Cmd {
	return rediseval.Run(ctx, c.rdb, sc, keys, boxed, args...)
}

// The scripts of scripts.go, their digests boxed.
var (
	evAcquireHash   = rediseval.New(acquireHash)
	evAcquireWrite  = rediseval.New(acquireWrite)
	evAcquireRead   = rediseval.New(acquireRead)
	evAcquirePermit = rediseval.New(acquirePermit)
	evRenew         = rediseval.New(renew)
	evRelease       = rediseval.New(release)
)
