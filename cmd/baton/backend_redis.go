package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/cmd/baton/internal/cli"
	"github.com/baton-go/baton/engine/leasekit"
	"github.com/baton-go/baton/redislock"
)

// quietRedis drops go-redis' own log lines: it prints connection-pool
// events (a connection retired after a TLS refusal, …) to stderr by
// itself, which would break --log-format json's one JSON object a line;
// baton reports every failure that matters through its own errors.
type quietRedis struct{}

func (quietRedis) Printf(context.Context, string, ...any) {}

func init() {
	redis.SetLogger(quietRedis{})
	register(&backendType{
		schemes:   []string{"redis", "rediss"},
		parse:     func(u engineURL) error { return baton.CheckURL(u.orig) },
		open:      openRedis,
		checkHold: func(cmd string, _ engineURL, cfg *runConfig) error { return checkRedisTTL(cmd, "Redis", cfg.ttl) },
		noClean: func(engineURL) error {
			return cli.Usagef("clean: not applicable to the Redis engine: every key and waiting intent it writes expires by itself " +
				"(a dead holder's within --ttl); run baton inspect to see holders, tokens, time left and waiters")
		},
	})
}

// checkRedisTTL refuses a --ttl the Redis and Redlock engines cannot
// honour (engine names it), offline: their lease times are whole
// milliseconds (PEXPIRE, PX), and below leasekit.MinTTL the renewal and
// drift margins stop making sense. Truncating instead would turn a TTL
// under 1ms into 0, which the engines read as "unset": their 15s default.
func checkRedisTTL(cmd, engine string, ttl time.Duration) error {
	switch {
	case ttl < leasekit.MinTTL:
		return cli.Usagef("%s: --ttl %v: the %s engine needs a TTL of at least %v", cmd, ttl, engine, leasekit.MinTTL)
	case ttl%time.Millisecond != 0:
		return cli.Usagef("%s: --ttl %v: the %s engine keeps TTLs in whole milliseconds", cmd, ttl, engine)
	}
	return nil
}

// markRedisRefusal marks an acquire's Redis refusal with baton.ErrAuth: a
// user whose ACL lacks the lock's keys connects fine and is refused only
// by the acquire script.
func markRedisRefusal(err error) error {
	return markRefusal(err, func(msg string) bool {
		return errors.Is(redislock.Classify(errors.New(msg)), baton.ErrAuth)
	})
}

// openRedis connects to a Redis primary through package redislock, which
// proves the connection (and AUTH) by a PING, retried until
// --connect-timeout. A plain-text connection that failed is checked for
// a server that speaks TLS, so that the message names the cure.
func openRedis(ctx context.Context, _ *runConfig, u engineURL, _ string, opts []baton.Option) (*backend, error) {
	bc, err := baton.Open(ctx, u.orig, opts...)
	if err != nil {
		if u.scheme == "redis" && !errors.Is(err, baton.ErrAuth) && !errors.Is(err, baton.ErrInvalidOption) {
			if tlsErr := plainToTLS(ctx, urlHosts(u), "rediss"); tlsErr != nil {
				err = fmt.Errorf("%w (%w)", tlsErr, err)
			}
		}
		return nil, u.scrub(err)
	}
	c, _ := baton.As[*redislock.Client](bc)
	return refusing(&backend{
		engine: "redis",
		client: bc,
		locker: func(name string, mode lockMode, permits int) (baton.Locker, error) {
			return pickLocker(name, mode, permits, c.Mutex, c.RWMutex, c.Semaphore)
		},
		election: func(name string) (baton.Elector, error) { return c.Election(name) },
	}, markRedisRefusal), nil
}
