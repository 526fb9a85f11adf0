package backend

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/zklock"
)

// zkPower: a connect error that names the URL (and zk+tls:// when a
// plain-text server answers TLS), the session timeout the server
// negotiated, and the lock directories, which only ZooKeeper can list
// (the exporter's PREFIX) and which a drill removes.
var zkPower = power{openErr: zkOpenErr, opened: zkOpened, list: zkList, drillClean: zkDrillClean}

func zkOpenErr(d *dial, err error) error {
	if errors.Is(err, baton.ErrInvalidOption) {
		return err
	}
	if d.ctx.Err() == nil && !errors.Is(err, baton.ErrAuth) {
		err = d.tlsHint(markUnavailable(err))
	}
	return fmt.Errorf("connect %s: %w", d.u.Redacted, err)
}

func zkOpened(d *dial, b *Backend) error {
	c, _ := baton.As[*zklock.Client](b.Client)
	if got := c.SessionTimeout(); got != d.cfg.TTL {
		d.env.Note("--ttl %v: the ZooKeeper server negotiated a session timeout of %v", d.cfg.TTL, got)
	}
	b.serverTTL = func(context.Context) (time.Duration, error) { return c.SessionTimeout(), nil }
	return nil
}

// zkChildren lists the children of p; none when p is gone.
func zkChildren(c *zklock.Client, p string) ([]string, error) {
	conn := c.Conn()
	if conn == nil {
		return nil, errors.New("zk: no session")
	}
	kids, _, err := conn.Children(p)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	return kids, err
}

// zkList lists the locks directly under a prefix: the children of its
// directory that are no entries (a lock name is no parent of another).
func zkList(b *Backend) Lister {
	c, _ := baton.As[*zklock.Client](b.Client)
	return func(_ context.Context, prefix string) ([]string, error) {
		dir, err := c.Dir(prefix)
		if err != nil {
			return nil, err
		}
		kids, err := zkChildren(c, dir)
		if err != nil {
			return nil, fmt.Errorf("%w: list %s: %w", baton.ErrUnavailable, prefix, err)
		}
		var out []string
		for _, k := range kids {
			if !strings.HasPrefix(k, "_c_") && !strings.Contains(k, "-lock-") { // an entry: prefix is a lock
				out = append(out, prefix+"/"+k)
			}
		}
		slices.Sort(out)
		return out, nil
	}
}

// zkDrillClean deletes a drill's prefix, children first: ZooKeeper keeps
// every lock's persistent directory. (Not on zk+tls://, whose chroot
// zklock.ParseURL does not read.)
func zkDrillClean(b *Backend) func(context.Context, string) error {
	c, _ := baton.As[*zklock.Client](b.Client)
	_, chroot, err := zklock.ParseURL(b.url.Raw)
	if err != nil {
		return nil
	}
	var del func(ctx context.Context, p string) error
	del = func(ctx context.Context, p string) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		kids, err := zkChildren(c, p)
		if err != nil {
			return fmt.Errorf("list %s: %w", p, err)
		}
		for _, k := range kids {
			if err := del(ctx, p+"/"+k); err != nil {
				return err
			}
		}
		if err := c.Conn().Delete(p, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
			return fmt.Errorf("delete %s: %w", p, err)
		}
		return nil
	}
	return func(ctx context.Context, prefix string) error { return del(ctx, path.Join("/", chroot, prefix)) }
}
