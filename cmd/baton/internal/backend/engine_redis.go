package backend

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/cmd/baton/internal/cli"
	"github.com/baton-go/baton/engine/leasekit"
	"github.com/baton-go/baton/redislock"
)

// redisPower: a --ttl the engine can keep, no clean, and refusals told
// by redislock.Classify: a user whose ACL lacks the lock's keys connects
// fine and is refused only by the acquire script.
var redisPower = power{
	checkHold: func(cmd string, cfg *Config, _ Mode) error { return checkRedisTTL(cmd, "Redis", cfg.TTL) },
	noClean: func(URL) error {
		return cli.Usagef("clean: not applicable to the Redis engine: every key and waiting intent it writes expires by itself " +
			"(a dead holder's within --ttl); run baton inspect to see holders, tokens, time left and waiters")
	},
	refused: func(msg string) bool { return errors.Is(redislock.Classify(errors.New(msg)), baton.ErrAuth) },
}

// quietRedis drops go-redis' own log lines: it prints connection-pool
// events (a connection retired after a TLS refusal, …) to stderr by
// itself, which would break --log-format json's one JSON object a line;
// baton reports every failure that matters through its own errors.
type quietRedis struct{}

func (quietRedis) Printf(context.Context, string, ...any) {}

func init() { redis.SetLogger(quietRedis{}) }

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

// redlockPower: only the mutex, a --ttl the engine can keep, and no
// clean, each told offline; the nodes' password comes from
// BATON_REDIS_PASSWORD when the URL has none.
var redlockPower = power{
	checkHold: func(cmd string, cfg *Config, mode Mode) error {
		if err := redlockOnlyMutex(cmd, mode); err != nil {
			return err
		}
		return checkRedisTTL(cmd, "Redlock", cfg.TTL)
	},
	noClean: func(URL) error {
		return cli.Usagef("clean: not applicable to the Redlock engine: every lock key expires by itself on every node " +
			"(a dead holder's within --ttl); run baton inspect to see the holder, its token, process and time left")
	},
	passwordEnv: "BATON_REDIS_PASSWORD",
}

// redlockOnlyMutex is the usage error of a recipe Redlock does not have.
func redlockOnlyMutex(cmd string, mode Mode) error {
	what := ""
	switch {
	case cmd == "elect":
		what = "elections"
	case mode == ModeRead || mode == ModeWrite:
		what = "read/write locks (--read, --write)"
	case mode == ModeShared:
		what = "semaphores (--shared)"
	default:
		return nil
	}
	return cli.Usagef("%s: Redlock has only the mutex: no %s. The quorum fencing token proves the order of one holder "+
		"after another, not of several at once; use a redis:// primary, etcd, ZooKeeper or SQL for them", cmd, what)
}
