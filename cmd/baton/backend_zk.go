package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/zklock"
)

func init() {
	register(&backendType{schemes: []string{"zk", "zk+tls"}, parse: parseZK, open: openZK})
}

// parseZK checks a zk:// or zk+tls:// URL offline, as zklock opens it.
func parseZK(u engineURL) error { return baton.CheckURL(u.orig) }

// openZK connects to ZooKeeper through baton.Open (zklock reads the URL,
// the digest user and the BATON_ZK_* TLS files). What is the CLI's alone
// stays here: a plain-text connect that failed against a TLS port says
// to use zk+tls://, and a session timeout the server changed is noted.
func openZK(ctx context.Context, cfg *runConfig, u engineURL, _ string, opts []baton.Option) (*backend, error) {
	bc, err := baton.Open(ctx, u.orig, opts...)
	if err != nil {
		return nil, zkOpenError(ctx, u, err)
	}
	c, _ := baton.As[*zklock.Client](bc)
	if got := c.SessionTimeout(); got != cfg.ttl {
		note("--ttl %v: the ZooKeeper server negotiated a session timeout of %v", cfg.ttl, got)
	}
	return &backend{
		engine: "zk",
		client: bc,
		locker: func(name string, mode lockMode, permits int) (baton.Locker, error) {
			return pickLocker(name, mode, permits, c.Mutex, c.RWMutex, c.Semaphore)
		},
		election: func(n string) (baton.Elector, error) { return c.Election(n) },
		serverTTL: func(context.Context) (time.Duration, error) {
			return c.SessionTimeout(), nil
		},
	}, nil
}

// zkOpenError is the CLI's form of a failed open: a bad URL or TLS file
// as zklock words it; anything else but a refusal counts as unavailable,
// names the URL, and, on a plain-text URL, says so when a server answers
// TLS.
func zkOpenError(ctx context.Context, u engineURL, err error) error {
	if errors.Is(err, baton.ErrInvalidOption) {
		return err
	}
	if ctx.Err() == nil && !errors.Is(err, baton.ErrAuth) && !errors.Is(err, baton.ErrUnavailable) {
		err = fmt.Errorf("%w: %w", baton.ErrUnavailable, err)
	}
	if u.scheme == "zk" && ctx.Err() == nil && !errors.Is(err, baton.ErrAuth) {
		_, rest, _ := strings.Cut(u.raw, "://")
		servers, _, _ := zklock.ParseURL("zk://" + rest) // CheckURL passed
		if tlsErr := plainToTLS(ctx, servers, "zk+tls"); tlsErr != nil {
			err = fmt.Errorf("%w (%w)", tlsErr, err)
		}
	}
	return fmt.Errorf("connect %s: %w", u.redacted, err)
}
