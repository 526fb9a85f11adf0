package backend

import (
	"context"
	"fmt"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/etcdlock"
)

// etcdPower: --ttl rounded up to whole seconds with a note, a read of
// the lock's own key at connect (a role without rights on it is told at
// once), the lease the server granted, and refusals told by their text
// (gRPC may carry them as text only).
var etcdPower = power{before: etcdTTL, opened: etcdOpened, refused: etcdRefused}

// etcdLease is the lease TTL etcd gives for ttl: whole seconds, rounded up.
func etcdLease(ttl time.Duration) time.Duration {
	if whole := ttl.Truncate(time.Second); whole < ttl {
		return whole + time.Second
	}
	return ttl
}

func etcdTTL(d *dial) ([]baton.Option, error) {
	if ttl := etcdLease(d.cfg.TTL); ttl != d.cfg.TTL {
		d.env.Note("--ttl %v rounded up to %v: etcd leases are whole seconds", d.cfg.TTL, ttl)
		return []baton.Option{baton.WithTTL(ttl)}, nil
	}
	return nil, nil
}

func etcdOpened(d *dial, b *Backend) error {
	lc, _ := baton.As[*etcdlock.Client](b.Client)
	cli, ttl := lc.Etcd(), etcdLease(d.cfg.TTL)
	cctx, cancel := context.WithTimeout(d.ctx, d.cfg.ConnectTimeout)
	defer cancel()
	if _, err := cli.Get(cctx, d.name, clientv3.WithCountOnly()); err != nil {
		if strings.Contains(err.Error(), "etcdserver: permission denied") {
			err = fmt.Errorf("%s has no read permission on the key %q (grant its role readwrite on the lock names' prefix): %w",
				etcdIdentity(d), d.name, err)
		}
		return fmt.Errorf("connect %s: %w", d.u.Redacted, etcdErr(err))
	}
	b.granted = func() {
		if got := lc.GrantedTTL(); got != 0 && got != ttl {
			d.env.Note("--ttl %v: the etcd server granted a %v lease (its minimum or maximum)", ttl, got)
		}
	}
	b.serverTTL = func(ctx context.Context) (time.Duration, error) {
		g, err := cli.Grant(ctx, int64(ttl/time.Second)) // revoked at once, else it expires within ttl
		if err != nil {
			return 0, fmt.Errorf("probe the lease TTL on %s: %w", d.u.Redacted, etcdErr(err))
		}
		_, _ = cli.Revoke(ctx, g.ID)
		return time.Duration(g.TTL) * time.Second, nil
	}
	return nil
}

// etcdIdentity names who the server took the client for: the user baton
// logs in as (the URL's, else BATON_ETCD_USER), or the client
// certificate's common name when no user is given.
func etcdIdentity(d *dial) string {
	user := d.u.User
	if !d.u.HasUser {
		user = d.env.Getenv("BATON_ETCD_USER")
	}
	if user == "" {
		return "the client certificate's identity (no user given)"
	}
	return fmt.Sprintf("user %q", user)
}

// etcdRefused reports whether an etcd error's text is a refusal of the
// user's rights or credentials, however gRPC carried it: a role that may
// read the lock's prefix but not write it is refused only by the acquire.
func etcdRefused(msg string) bool {
	return containsAny(msg, "etcdserver: permission denied", "etcdserver: user name is empty",
		"etcdserver: invalid auth token", "etcdserver: authentication failed")
}

// etcdErr marks authentication and TLS failures with baton.ErrAuth and
// everything else with baton.ErrUnavailable. gRPC flattens TLS handshake
// errors into text, so those are recognised by their message.
func etcdErr(err error) error {
	if msg := err.Error(); etcdRefused(msg) ||
		containsAny(msg, "etcdserver: revision of auth store is old", "authentication handshake failed", "x509:") {
		return fmt.Errorf("%w: %w", baton.ErrAuth, err)
	}
	return markUnavailable(err)
}
