package main

import (
	"context"
	"os"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/cmd/baton/internal/cli"
	"github.com/baton-go/baton/redlock"
)

func init() {
	register(&backendType{
		schemes: []string{"redlock"},
		parse:   func(u engineURL) error { return baton.CheckURL(u.orig) },
		open:    openRedlock,
		checkHold: func(cmd string, _ engineURL, cfg *runConfig) error {
			if err := redlockOnlyMutex(cmd, cfg.mode); err != nil {
				return err
			}
			return checkRedisTTL(cmd, "Redlock", cfg.ttl)
		},
		noClean: func(engineURL) error { return redlockNoClean() },
	})
}

// redlockOnlyMutex is the usage error of a recipe Redlock does not have.
// It is checked offline (parseHold), before anything connects.
func redlockOnlyMutex(cmd string, mode lockMode) error {
	what := ""
	switch {
	case cmd == "elect":
		what = "elections"
	case mode == modeRead || mode == modeWrite:
		what = "read/write locks (--read, --write)"
	case mode == modeShared:
		what = "semaphores (--shared)"
	default:
		return nil
	}
	return cli.Usagef("%s: Redlock has only the mutex: no %s. The quorum fencing token proves the order of one holder "+
		"after another, not of several at once; use a redis:// primary, etcd, ZooKeeper or SQL for them", cmd, what)
}

// redlockNoClean is the usage error of `baton clean` on Redlock.
func redlockNoClean() error {
	return cli.Usagef("clean: not applicable to the Redlock engine: every lock key expires by itself on every node " +
		"(a dead holder's within --ttl); run baton inspect to see the holder, its token, process and time left")
}

// openRedlock connects to a Redlock deployment through package redlock,
// which reads the nodes' indexes until a majority answered, retried until
// --connect-timeout: a connect check that writes nothing, so inspect and
// the exporter stay read-only (the first acquire sets missing indexes).
func openRedlock(ctx context.Context, cfg *runConfig, u engineURL, _ string, opts []baton.Option) (*backend, error) {
	if err := redlockOnlyMutex("run", cfg.mode); err != nil {
		return nil, err
	}
	bc, err := baton.Open(ctx, u.orig, opts...)
	if err != nil {
		su := u // scrub the password whether it came from the URL or the environment
		if !u.hasUser {
			su.password = os.Getenv("BATON_REDIS_PASSWORD")
		}
		return nil, su.scrub(err)
	}
	c, _ := baton.As[*redlock.Client](bc)
	return &backend{
		engine: "redlock",
		client: bc,
		locker: func(name string, mode lockMode, _ int) (baton.Locker, error) {
			if err := redlockOnlyMutex("run", mode); err != nil {
				return nil, err
			}
			return c.Mutex(name)
		},
		election: func(string) (baton.Elector, error) { return nil, redlockOnlyMutex("elect", modeMutex) },
	}, nil
}
