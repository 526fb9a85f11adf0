package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/go-zookeeper/zk"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/queue"
	"github.com/baton-go/baton/redislock"
	"github.com/baton-go/baton/redlock"
	"github.com/baton-go/baton/sqllock"
)

// lockView is one lock as `baton exporter` shows it: what inspect reads,
// in inspect's JSON entries, so that the page, /api/locks and inspect
// --json speak one language.
type lockView struct {
	Name string `json:"name"`
	// Entries are in the order the lock serves them, holders first.
	Entries []entryJSON `json:"entries"`
	// Queue is set on the queue engines (ZooKeeper, etcd), the only ones
	// that can tell dead and duplicate entries.
	Queue bool `json:"queue"`
	// TokenBound is set where the holder's token is unknown from outside
	// but bounded (ZooKeeper): no grant so far has a larger token.
	TokenBound *uint64 `json:"token_bound,omitempty"`
	// Error is why the last read of this lock failed ("" when it worked).
	Error string `json:"error,omitempty"`
}

// viewFunc reads one lock for the exporter. Errors carry baton.ErrAuth or
// baton.ErrUnavailable where the engine tells them apart.
type viewFunc func(ctx context.Context, name string) (lockView, error)

// viewOf returns the exporter's reader of b: the engine's own, else the
// shared one of the queue engines.
func viewOf(b *backend) viewFunc {
	if b.view != nil {
		return b.view
	}
	if b.queue != nil {
		return queueView(b.queue)
	}
	return nil
}

// queueView reads a queue engine (ZooKeeper, etcd). Where tokens are
// unknown from outside but bounded, the bound is read too.
func queueView(q queueAdmin) viewFunc {
	return func(ctx context.Context, name string) (lockView, error) {
		es, err := q.Inspect(ctx, name)
		if err != nil {
			return lockView{}, err
		}
		v := lockView{Name: name, Queue: true, Entries: toJSON(es)}
		tb, ok := q.(queue.TokenBounder)
		if ok && len(es) > 0 && slices.ContainsFunc(es, func(e queue.EntryInfo) bool { return e.Holder && e.Token == 0 }) {
			b, err := tb.TokenBound(ctx, name)
			if err != nil {
				return lockView{}, err
			}
			v.TokenBound = &b
		}
		return v, nil
	}
}

// redisView reads the Redis engine: holders with owner, token and time
// left, then the waiting intents.
func redisView(read func(context.Context, string) (redislock.Inspection, error)) viewFunc {
	return func(ctx context.Context, name string) (lockView, error) {
		in, err := read(ctx, name)
		if err != nil {
			return lockView{}, redisErr(err)
		}
		v := lockView{Name: name, Entries: make([]entryJSON, 0, len(in.Entries))}
		for i, e := range in.Entries {
			j := entryJSON{Position: i, Kind: e.Recipe, Marker: e.Recipe, Session: e.Owner, State: e.Role,
				Holder: e.Role == "holder", Token: knownToken(e.Token), LeaseLeftMS: ms(e.TTL.Milliseconds())}
			v.Entries = append(v.Entries, j)
		}
		return v, nil
	}
}

// sqlView reads the SQL engine: holder rows, then waiters' intent rows in
// ticket order; a row past its deadline on the database clock is
// "expired".
func sqlView(c *sqllock.Client) viewFunc {
	return func(ctx context.Context, name string) (lockView, error) {
		rows, err := c.Inspect(ctx, name)
		if err != nil {
			return lockView{}, sqlErr(err)
		}
		v := lockView{Name: name, Entries: make([]entryJSON, 0, len(rows))}
		for i, r := range rows {
			j := entryJSON{Position: i, Kind: r.Recipe(), Marker: r.Kind, Session: r.Owner, State: "holder",
				Holder: true, LeaseLeftMS: ms(r.Left.Milliseconds())}
			switch {
			case r.Left <= 0:
				j.State, j.Holder = "expired", false
			case r.Waiting():
				j.State, j.Holder = "waiting", false
			default:
				j.Token = knownToken(r.Token) // a waiter's is its ticket, not a token
			}
			v.Entries = append(v.Entries, j)
		}
		return v, nil
	}
}

// redlockView reads Redlock: one entry per owner found on the nodes, a
// holder when a majority of the nodes hold it. A majority must answer.
func redlockView(read func(context.Context, string) ([]redlock.NodeEntry, error)) viewFunc {
	return func(ctx context.Context, name string) (lockView, error) {
		es, err := read(ctx, name)
		if err != nil {
			return lockView{}, redlockErr(err)
		}
		var errs []error
		count := map[string]int{}
		first := map[string]redlock.NodeEntry{}
		var owners []string
		for _, e := range es {
			switch {
			case e.Err != nil:
				errs = append(errs, e.Err)
			case e.Owner != "":
				if count[e.Owner] == 0 {
					owners = append(owners, e.Owner)
					first[e.Owner] = e
				}
				count[e.Owner]++
				if f := first[e.Owner]; e.Grant != 0 && f.Grant == 0 {
					first[e.Owner] = e
				}
			}
		}
		majority := len(es)/2 + 1
		if len(es)-len(errs) < majority {
			return lockView{}, redlockErr(fmt.Errorf("%w: %d of %d Redlock nodes answered, want ≥ %d: %w",
				baton.ErrUnavailable, len(es)-len(errs), len(es), majority, errors.Join(errs...)))
		}
		v := lockView{Name: name}
		for i, o := range owners {
			e := first[o]
			j := entryJSON{Position: i, Kind: "mutex", Marker: "mutex", Session: o, State: "holder", Holder: true,
				Token: knownToken(e.Grant), LeaseLeftMS: ms(e.TTLLeft.Milliseconds())}
			if count[o] < majority {
				j.State, j.Holder = "partial", false
				j.Note = fmt.Sprintf("on %d of %d nodes, below the majority", count[o], len(es))
			}
			v.Entries = append(v.Entries, j)
		}
		return v, nil
	}
}

func knownToken(t uint64) *uint64 {
	if t == 0 {
		return nil
	}
	return &t
}

func ms(v int64) *int64 { return &v }

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
	l, ok := b.queue.(zkLister)
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
