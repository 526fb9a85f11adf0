package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/go-zookeeper/zk"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/engine/queuekit"
)

// lockRead is one read of one lock by the exporter: the engine's
// Inspection, the one `baton inspect` prints.
type lockRead struct {
	in baton.Inspection
	// tokenBound is set where the holders' tokens are unknown from
	// outside but bounded (ZooKeeper): no grant so far has a larger
	// token. 0 when there is none.
	tokenBound uint64
}

// viewFunc reads one lock for the exporter and the drill's scans. Errors
// wrap baton.ErrAuth or baton.ErrUnavailable where the engine tells them
// apart.
type viewFunc func(ctx context.Context, name string) (lockRead, error)

// viewOf returns the reader of b's locks: the same on every engine, the
// client's Inspect, with the token bound of the engines that have one
// (queuekit.TokenBounder) when a holder's token is unknown.
func viewOf(b *backend) viewFunc {
	c := b.client
	tb, bounds := baton.As[queuekit.TokenBounder](c)
	return func(ctx context.Context, name string) (lockRead, error) {
		in, err := c.Inspect(ctx, name)
		if err != nil {
			return lockRead{}, err
		}
		r := lockRead{in: in}
		if bounds && slices.ContainsFunc(in.Holders, func(e baton.Entry) bool { return e.Token == 0 }) {
			if r.tokenBound, err = tb.TokenBound(ctx, name); err != nil {
				return lockRead{}, err
			}
		}
		return r, nil
	}
}

// isQueue reports whether b's engine keeps queues of entries that stay
// until clean removes them (ZooKeeper, etcd): the only engines whose
// dead and duplicate entries are counted.
func isQueue(b *backend) bool {
	_, ok := b.queue()
	return ok
}

// expired reports whether e holds and waits no more: its lease ended on
// the server's clock (Left < 0), or, on an engine whose entries go by
// themselves (not a queue engine: queue is false), the engine flagged it
// dead — a SQL row past its deadline, free to the next acquire. A queue
// engine's dead entry is not expired: it stays, and blocks, until clean
// removes it.
func expired(e baton.Entry, queue bool) bool { return e.Left < 0 || e.Dead && !queue }

// prefixSuffix ends a PREFIX argument: "jobs/*" names every lock directly
// under "jobs". A lock name cannot be a parent of another, so the children
// of a directory that is not itself a lock are the locks.
const prefixSuffix = "/*"

// zkLister is what listing a prefix needs of the ZooKeeper client.
type zkLister interface {
	Dir(name string) (string, error)
	Conn() *zk.Conn
}

// listerOf returns how b lists the locks under a prefix, nil when its
// engine cannot (only ZooKeeper's directories can be listed through the
// library's clients).
func listerOf(b *backend) func(ctx context.Context, prefix string) ([]string, error) {
	l, ok := baton.As[zkLister](b.client)
	if !ok {
		return nil
	}
	return func(_ context.Context, prefix string) ([]string, error) {
		dir, err := l.Dir(prefix)
		if err != nil {
			return nil, err
		}
		kids, _, err := l.Conn().Children(dir)
		if errors.Is(err, zk.ErrNoNode) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%w: list %s: %w", baton.ErrUnavailable, prefix, err)
		}
		var out []string
		for _, k := range kids {
			if strings.HasPrefix(k, "_c_") || strings.Contains(k, "-lock-") { // an entry: prefix is a lock
				continue
			}
			out = append(out, prefix+"/"+k)
		}
		slices.Sort(out)
		return out, nil
	}
}

// canList reports, offline, whether the engine of a backend URL can list
// the locks under a prefix.
func canList(raw string) bool {
	u, err := splitURL(raw)
	return err == nil && (u.scheme == "zk" || u.scheme == "zk+tls")
}
