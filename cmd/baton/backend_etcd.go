package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/etcdlock"
)

func init() {
	register(&engine{
		schemes: []string{"etcd", "etcds"},
		parse:   parseEtcd,
		open:    openEtcd,
	})
}

// parseEtcd checks an etcd:// or etcds:// URL offline.
func parseEtcd(u engineURL) error {
	if _, _, err := etcdlock.ParseURL(u.raw); err != nil {
		return usagef("backend %s: %v", u.redacted, err)
	}
	return nil
}

func openEtcd(ctx context.Context, cfg *runConfig, u engineURL, name string) (*backend, error) {
	endpoints, useTLS, err := etcdlock.ParseURL(u.raw)
	if err != nil {
		return nil, usagef("backend %s: %v", u.redacted, err)
	}
	user, pass := u.user, u.password
	if !u.hasUser {
		user, pass = os.Getenv("BATON_ETCD_USER"), os.Getenv("BATON_ETCD_PASSWORD")
	}
	ttl := cfg.ttl.Truncate(time.Second)
	if ttl < cfg.ttl {
		ttl += time.Second
	}
	if ttl != cfg.ttl {
		note("--ttl %v rounded up to %v: etcd leases are whole seconds", cfg.ttl, ttl)
	}
	ccfg := clientv3.Config{
		Endpoints:   endpoints,
		DialTimeout: cfg.connectTimeout,
		Username:    user,
		Password:    pass,
		Logger:      zap.NewNop(),
	}
	if useTLS {
		tc, err := tlsFromEnv("BATON_ETCD", u.tlsName)
		if err != nil {
			return nil, err
		}
		ccfg.TLS = tc
	}
	cctx, cancel := context.WithTimeout(ctx, cfg.connectTimeout)
	defer cancel()
	if ccfg.TLS != nil {
		if err := probeEtcdTLS(cctx, endpoints, ccfg.TLS); err != nil {
			return nil, fmt.Errorf("connect %s: %w", u.redacted, err)
		}
	}
	cli, err := clientv3.New(ccfg)
	if err != nil {
		return nil, fmt.Errorf("connect %s: %w", u.redacted, etcdPlainErr(ctx, useTLS, endpoints, err))
	}
	// clientv3.New does not wait for a connection unless it authenticates:
	// probe with a linearizable read, which also needs a quorum.
	if _, err := cli.Get(cctx, name, clientv3.WithCountOnly()); err != nil {
		cli.Close()
		if errors.Is(err, rpctypes.ErrPermissionDenied) || errors.Is(err, rpctypes.ErrGRPCPermissionDenied) {
			err = fmt.Errorf("%s has no read permission on the key %q (grant its role readwrite on the lock names' prefix): %w",
				etcdIdentity(user), name, err)
		}
		return nil, fmt.Errorf("connect %s: %w", u.redacted, etcdPlainErr(ctx, useTLS, endpoints, err))
	}
	lc, err := etcdlock.New(cli, etcdlock.Options{TTL: ttl, Observer: cfg.observer})
	if err != nil {
		cli.Close()
		return nil, err
	}
	return refusing(&backend{
		engine: "etcd",
		locker: func(name string, mode lockMode, permits int) (baton.Locker, error) {
			return pickLocker(name, mode, permits, lc.Mutex, lc.RWMutex, lc.Semaphore)
		},
		election: func(n string) (baton.Elector, error) { return lc.Election(n) },
		inspect:  inspectQueue,
		queue:    lc,
		close:    func() { _ = lc.Close(); _ = cli.Close() },
		granted: func() {
			if got := lc.GrantedTTL(); got != 0 && got != ttl {
				note("--ttl %v: the etcd server granted a %v lease (its minimum or maximum)", ttl, got)
			}
		},
		serverTTL: func(ctx context.Context) (time.Duration, error) {
			// A lease granted and revoked at once (else it expires by
			// itself within the TTL).
			g, err := cli.Grant(ctx, int64(ttl/time.Second))
			if err != nil {
				return 0, fmt.Errorf("probe the lease TTL on %s: %w", u.redacted, etcdErr(err))
			}
			_, _ = cli.Revoke(ctx, g.ID)
			return time.Duration(g.TTL) * time.Second, nil
		},
	}, markEtcdRefusal), nil
}

// etcdPlainErr is etcdErr, except that a plain-text client whose
// failure was not a refusal learns when the endpoints speak TLS.
func etcdPlainErr(ctx context.Context, useTLS bool, endpoints []string, err error) error {
	err = etcdErr(err)
	if useTLS || errors.Is(err, baton.ErrAuth) {
		return err
	}
	if tlsErr := plainToTLS(ctx, endpoints, "etcds"); tlsErr != nil {
		return fmt.Errorf("%w (%w)", tlsErr, err)
	}
	return err
}

// etcdIdentity names who the server took the client for: the user, or
// the client certificate's common name when no user is given.
func etcdIdentity(user string) string {
	if user == "" {
		return "the client certificate's identity (no user given)"
	}
	return fmt.Sprintf("user %q", user)
}

// etcdRefused reports whether an etcd error's text is a refusal of the
// user's rights or credentials (gRPC may carry it as text only).
func etcdRefused(msg string) bool {
	for _, p := range []string{"etcdserver: permission denied", "etcdserver: user name is empty",
		"etcdserver: invalid auth token", "etcdserver: authentication failed"} {
		if strings.Contains(msg, p) {
			return true
		}
	}
	return false
}

// markEtcdRefusal marks an acquire's refusal with baton.ErrAuth: a role
// that may read the lock's prefix but not write it passes the connect
// probe and is refused only by the acquire.
func markEtcdRefusal(err error) error { return markRefusal(err, etcdRefused) }

// etcdErr marks authentication and TLS failures with baton.ErrAuth and
// everything else with baton.ErrUnavailable. gRPC flattens TLS handshake
// errors into text, so those are recognised by their message.
func etcdErr(err error) error {
	for _, auth := range []error{rpctypes.ErrAuthFailed, rpctypes.ErrPermissionDenied, rpctypes.ErrUserEmpty,
		rpctypes.ErrInvalidAuthToken, rpctypes.ErrAuthOldRevision, rpctypes.ErrGRPCAuthFailed, rpctypes.ErrGRPCPermissionDenied} {
		if errors.Is(err, auth) || err.Error() == auth.Error() {
			return fmt.Errorf("%w: %w", baton.ErrAuth, err)
		}
	}
	msg := err.Error()
	if strings.Contains(msg, "authentication handshake failed") || strings.Contains(msg, "x509:") {
		return fmt.Errorf("%w: %w", baton.ErrAuth, err)
	}
	if errors.Is(err, baton.ErrAuth) || errors.Is(err, baton.ErrUnavailable) {
		return err
	}
	return fmt.Errorf("%w: %w", baton.ErrUnavailable, err)
}
