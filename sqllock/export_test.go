package sqllock

import (
	"context"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/engine"
	"github.com/baton-go/baton/engine/leasekit"
)

// Hosts is hosts, the hosts a SQL URL connects to.
var Hosts = hosts

// Warning is the engine's transport warning for rawURL.
func Warning(rawURL string, getenv func(string) string) string {
	return engine.Warning(rawURL, getenv)
}

// Of returns the *Client behind c, which New or baton.Open made.
func Of(c *baton.Client) *Client {
	sc, ok := baton.As[*Client](c)
	if !ok {
		panic("sqllock.Of: not a sqllock client")
	}
	return sc
}

// UsesSequence reports whether c's MySQL-dialect tokens come from the
// sequence (MariaDB), as they do from its first acquire on.
func UsesSequence(c *baton.Client) bool { return Of(c).st.seq.Load() }

// CounterOnly keeps c on MySQL's token counter even on MariaDB: its
// migration creates no sequence, and its tokens come from the counter
// table, as on MySQL. Call it before c's first use.
func CounterOnly(c *Client) { c.q.noSeq = true }

// Identified reports whether c has named its server and table (at its
// first use): what its wake-ups and PostgreSQL's LISTEN are keyed by.
func Identified(c *Client) bool { return c.hubp.Load() != nil }

// Row is one owned row of a lock, as Inspect reads it.
type Row = row

// Inspect returns the owned rows of name, read-only (inspectRows).
func (c *Client) Inspect(ctx context.Context, name string) ([]Row, error) {
	return c.inspectRows(ctx, name)
}

// Entries lists the owned rows of name as "slot/kind/owner" (entries).
func (c *Client) Entries(ctx context.Context, name string) ([]string, error) {
	return c.entries(ctx, name)
}

// Table returns the name of the locks table.
func (c *Client) Table() string { return c.table() }

// TryMutex makes one mutex attempt at name, as a TryLock's, and returns
// what a failed attempt would hand to Forget (an empty Key: nothing).
func (c *Client) TryMutex(ctx context.Context, name string) (granted bool, forget string, err error) {
	req := &leasekit.Request{Name: name, Bound: c.st.Bind(name, leasekit.KindMutex)}
	res, err := c.mutexAttempts(req).Try(ctx, 0)
	return res.Granted, res.Ref.Key, err
}

// HoldSchema takes c's schema gate, as another acquire's first-use
// preparation in flight does, until release is called.
func HoldSchema(c *Client) (release func()) {
	_ = c.lockSchema(context.Background())
	return c.unlockSchema
}
