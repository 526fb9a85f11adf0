// Package rediseval runs Lua scripts on go-redis with their command words
// boxed once. redislock and redlock run a script per acquire, renewal and
// release (Redlock on every node): go-redis' Script.Run builds each call's
// argument slice anew, boxing the digest and every key into an interface
// of its own, which made these calls most of a lock's allocations.
package rediseval

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// Script is a Lua script with its digest boxed once.
type Script struct {
	*redis.Script
	sha any // the digest, boxed
}

// New boxes s's digest.
func New(s *redis.Script) Script { return Script{Script: s, sha: s.Hash()} }

// BoxKeys boxes keys once, for Run.
func BoxKeys(keys []string) []any {
	b := make([]any, len(keys))
	for i, k := range keys {
		b[i] = k
	}
	return b
}

// Client is what Run runs a script on: a go-redis client, or one of its
// connections (*redis.Conn).
type Client interface {
	redis.Scripter
	Process(ctx context.Context, cmd redis.Cmder) error
}

// Run runs sc on keys (boxed: boxed[i] holds keys[i]) with args, in one
// allocation of the command's words, as Script.Run does: EVALSHA, and on
// NOSCRIPT (a flushed script cache, a failover onto a server that never
// saw it) EVAL, which loads the script. The first key is marked for
// Cluster's routing, as go-redis' own EvalSha marks it. Concurrent calls
// may share boxed and args: they are only read.
func Run(ctx context.Context, rdb Client, sc Script, keys []string, boxed []any, args ...any) *redis.Cmd {
	words := make([]any, 0, 3+len(boxed)+len(args))
	words = append(words, "evalsha", sc.sha, len(boxed))
	words = append(words, boxed...)
	words = append(words, args...)
	cmd := redis.NewCmd(ctx, words...)
	if len(boxed) > 0 {
		cmd.SetFirstKeyPos(3)
	}
	_ = rdb.Process(ctx, cmd)
	if err := cmd.Err(); err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
		// words' copy of args: passing args on would make every
		// caller's argument slice escape to the heap.
		return sc.Eval(ctx, rdb, keys, words[3+len(boxed):]...)
	}
	return cmd
}
