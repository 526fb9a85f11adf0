package exporter

import (
	"context"
	"slices"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/cmd/baton/internal/backend"
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
func viewOf(b *backend.Backend) viewFunc {
	c := b.Client
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
func isQueue(b *backend.Backend) bool {
	_, ok := b.Queue()
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
