package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/zklock"
)

func init() {
	register(&engine{schemes: []string{"zk", "zk+tls"}, parse: parseZK, open: openZK})
}

// zkURL returns the zk:// form zklock parses of a zk:// or zk+tls:// URL
// (without credentials), and whether it asks for TLS.
func zkURL(u engineURL) (string, bool) {
	_, rest, _ := strings.Cut(u.raw, "://")
	return "zk://" + rest, u.scheme == "zk+tls"
}

// parseZK checks a zk:// or zk+tls:// URL offline.
func parseZK(u engineURL) error {
	if u.hasUser && u.user == "" {
		return usagef("backend %s: empty ZooKeeper user", u.redacted)
	}
	raw, _ := zkURL(u)
	if _, _, err := zklock.ParseURL(raw); err != nil {
		return usagef("backend %s: %v", u.redacted, err)
	}
	return nil
}

// openZK connects to ZooKeeper. zk+tls:// connects to the servers'
// secureClientPort with BATON_ZK_CACERT (else the system roots) and the
// client pair BATON_ZK_CERT/_KEY; the digest user comes from the URL or
// BATON_ZK_USER / BATON_ZK_PASSWORD, and baton's nodes then carry an ACL
// naming that user alone.
func openZK(ctx context.Context, cfg *runConfig, u engineURL, _ string) (*backend, error) {
	raw, useTLS := zkURL(u)
	servers, chroot, err := zklock.ParseURL(raw)
	if err != nil {
		return nil, usagef("backend %s: %v", u.redacted, err)
	}
	dctx, cancel := context.WithTimeout(ctx, cfg.connectTimeout)
	defer cancel()
	opts := zklock.Options{SessionTimeout: cfg.ttl, Chroot: chroot, Observer: cfg.observer}
	if useTLS {
		if opts.TLS, err = tlsFromEnv("BATON_ZK", u.tlsName); err != nil {
			return nil, err
		}
	}
	user, pass := u.user, u.password
	if !u.hasUser {
		user, pass = os.Getenv("BATON_ZK_USER"), os.Getenv("BATON_ZK_PASSWORD")
	}
	if user != "" {
		opts.Auth = []zklock.Digest{{User: user, Password: pass}}
	}
	c, err := zklock.Dial(dctx, servers, opts)
	if err != nil {
		if ctx.Err() == nil && !errors.Is(err, baton.ErrAuth) && !errors.Is(err, baton.ErrUnavailable) {
			err = fmt.Errorf("%w: %w", baton.ErrUnavailable, err)
		}
		if !useTLS && ctx.Err() == nil && !errors.Is(err, baton.ErrAuth) {
			if tlsErr := plainToTLS(ctx, servers, "zk+tls"); tlsErr != nil {
				err = fmt.Errorf("%w (%w)", tlsErr, err)
			}
		}
		return nil, fmt.Errorf("connect %s: %w", u.redacted, err)
	}
	if got := c.SessionTimeout(); got != cfg.ttl {
		note("--ttl %v: the ZooKeeper server negotiated a session timeout of %v", cfg.ttl, got)
	}
	return &backend{
		engine: "zk",
		locker: func(name string, mode lockMode, permits int) (baton.Locker, error) {
			return pickLocker(name, mode, permits, c.Mutex, c.RWMutex, c.Semaphore)
		},
		election: func(n string) (baton.Elector, error) { return c.Election(n) },
		inspect:  inspectQueue,
		queue:    c, // a queue.TokenBounder too: Pzxid tokens are bounds
		close:    func() { _ = c.Close() },
		serverTTL: func(context.Context) (time.Duration, error) {
			return c.SessionTimeout(), nil
		},
	}, nil
}
