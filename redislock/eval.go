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
	evAcquireMutex  = rediseval.New(acquireMutex)
	evAcquireHash   = rediseval.New(acquireHash)
	evAcquireWrite  = rediseval.New(acquireWrite)
	evAcquireRead   = rediseval.New(acquireRead)
	evAcquirePermit = rediseval.New(acquirePermit)
	evRenew         = rediseval.New(renew)
	evRelease       = rediseval.New(release)
)

// The scripts' constant arguments, boxed once: a string variable boxed
// into an argument list is an allocation per call.
var (
	argNo, argYes any = "0", "1" // ARGV[5] of an acquire: record the intent
	modeH, modeZ  any = "h", "z" // a lease kept as a hash's owner, or a zset member
	// modeM and modeS are ARGV[2] of a mutex's release (its string, see
	// acquireMutex): with its waiters' set, a waiter woken and the channel
	// published on only when somebody waits; or without (a client whose
	// releases wake nobody alone). modeS is also the mutex's renewal mode.
	modeM, modeS any = "m", "s"
	// noWaiter is ARGV[3] of an attempt that records no intent: the
	// scripts read the waiter only to record or drop its intent, and
	// no intent is ever recorded under it.
	noWaiter any = ""
)
