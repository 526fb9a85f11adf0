// Package rediseval runs Lua scripts on go-redis with their command words
// boxed once. redislock and redlock run a script per acquire, renewal and
// release (Redlock on every node): go-redis' Script.Run builds each call's
// argument slice anew, boxing the digest and every key into an interface
// of its own, which made these calls most of a lock's allocations. It
// also tells, for both engines and the CLI, a server's refusal from its
// absence (Classify).
package rediseval

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/baton-go/baton"
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

// Refused reports whether a Redis error's text is a refusal: bad or
// missing credentials, an ACL that denies a key, channel or command, or
// TLS (the server's certificate, or ours refused by the server). Retrying
// does not cure these: they are baton.ErrAuth, not baton.ErrUnavailable.
func Refused(msg string) bool {
	for _, p := range refusals {
		if strings.Contains(msg, p) {
			return true
		}
	}
	return false
}

var refusals = []string{"NOAUTH", "WRONGPASS", "NOPERM", "ERR AUTH", "ERR invalid password", "ERR Client sent AUTH",
	"x509:", "tls: ", "first record does not look like a TLS handshake"}

// Classify marks a failure to reach or use a Redis server (or several:
// Redlock joins its nodes' errors) with baton.ErrAuth when its text shows
// a refusal (Refused), else with baton.ErrUnavailable. An error already
// marked with baton.ErrAuth or baton.ErrInvalidOption is returned as it
// is, and so is one marked with baton.ErrUnavailable that shows no
// refusal.
func Classify(err error) error {
	switch {
	case err == nil, errors.Is(err, baton.ErrAuth), errors.Is(err, baton.ErrInvalidOption):
		return err
	case Refused(err.Error()):
		return fmt.Errorf("%w: %w", baton.ErrAuth, err)
	case errors.Is(err, baton.ErrUnavailable):
		return err
	}
	return fmt.Errorf("%w: %w", baton.ErrUnavailable, err)
}
