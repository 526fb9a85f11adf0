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

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/cmd/baton/internal/cli"
	"github.com/baton-go/baton/etcdlock"
)

func init() {
	register(&backendType{
		schemes: []string{"etcd", "etcds"},
		parse:   parseEtcd,
		open:    openEtcd,
	})
}

// parseEtcd checks an etcd:// or etcds:// URL offline, as baton.Open does.
func parseEtcd(u engineURL) error {
	if err := baton.CheckURL(u.orig); err != nil {
		return cli.Usagef("%v", err)
	}
	return nil
}

// openEtcd connects through baton.Open, which reads the URL, the
// credentials (BATON_ETCD_USER, BATON_ETCD_PASSWORD) and the TLS files
// (BATON_ETCD_CACERT, _CERT, _KEY), and waits for a quorum read. The CLI
// adds the --ttl rounding note, the plain-text hint and a check of the
// lock's own key, so that a role without rights on it is told at once.
func openEtcd(ctx context.Context, cfg *runConfig, u engineURL, name string, opts []baton.Option) (*backend, error) {
	ttl := cfg.ttl.Truncate(time.Second)
	if ttl < cfg.ttl {
		ttl += time.Second
	}
	if ttl != cfg.ttl {
		note("--ttl %v rounded up to %v: etcd leases are whole seconds", cfg.ttl, ttl)
	}
	c, err := baton.Open(ctx, u.orig, append(opts, baton.WithTTL(ttl))...) // the later TTL wins
	if err != nil {
		return nil, etcdPlainErr(ctx, u, err)
	}
	lc, _ := baton.As[*etcdlock.Client](c)
	cli := lc.Etcd()
	cctx, cancel := context.WithTimeout(ctx, cfg.connectTimeout)
	defer cancel()
	if _, err := cli.Get(cctx, name, clientv3.WithCountOnly()); err != nil {
		_ = c.Close()
		if errors.Is(err, rpctypes.ErrPermissionDenied) || errors.Is(err, rpctypes.ErrGRPCPermissionDenied) {
			err = fmt.Errorf("%s has no read permission on the key %q (grant its role readwrite on the lock names' prefix): %w",
				etcdIdentity(etcdUser(u)), name, err)
		}
		return nil, fmt.Errorf("connect %s: %w", u.redacted, etcdErr(err))
	}
	return refusing(&backend{
		engine: "etcd",
		client: c,
		locker: func(name string, mode lockMode, permits int) (baton.Locker, error) {
			return pickLocker(name, mode, permits, lc.Mutex, lc.RWMutex, lc.Semaphore)
		},
		election: func(n string) (baton.Elector, error) { return lc.Election(n) },
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

// etcdPlainErr is baton.Open's error as the CLI reports it: a bad URL or
// TLS file is a usage error, and a plain-text client whose failure was
// not a refusal learns when the endpoints speak TLS.
func etcdPlainErr(ctx context.Context, u engineURL, err error) error {
	if errors.Is(err, baton.ErrInvalidOption) {
		return cli.Usagef("%v", err)
	}
	if u.scheme == "etcds" || errors.Is(err, baton.ErrAuth) {
		return err
	}
	if tlsErr := plainToTLS(ctx, urlHosts(u), "etcds"); tlsErr != nil {
		return fmt.Errorf("%w (%w)", tlsErr, err)
	}
	return err
}

// etcdUser is the user baton.Open logs in as: the URL's, else
// BATON_ETCD_USER.
func etcdUser(u engineURL) string {
	if u.hasUser {
		return u.user
	}
	return os.Getenv("BATON_ETCD_USER")
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
