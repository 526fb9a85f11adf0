// Package cmdcount counts the commands go-redis clients send, for the
// Redis engines' tests that check how many requests an operation costs
// (a wake-up, a handoff) without a proxy in the way.
package cmdcount

import (
	"context"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// Hook is a go-redis hook counting every command sent through the clients
// it is added to, a pipeline's commands one each. Pub/sub connections
// send outside the hooks and are not counted.
type Hook struct{ n atomic.Int64 }

// N returns the commands counted so far.
func (h *Hook) N() int64 { return h.n.Load() }

func (h *Hook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *Hook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.n.Add(1)
		return next(ctx, cmd)
	}
}

func (h *Hook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.n.Add(int64(len(cmds)))
		return next(ctx, cmds)
	}
}
