package engine

import (
	"context"

	"github.com/baton-go/baton"
)

// Lister is a Conn that lists its lock names, for programs that follow
// every lock under a prefix (the CLI's exporter, PREFIX/*). An engine
// whose Conn is a Lister sets Driver.Lists.
type Lister interface {
	// Names returns the lock names directly under prefix, sorted: a
	// name with prefix+"/" before it and no "/" after.
	Names(ctx context.Context, prefix string) ([]string, error)
}

// Purger is a Conn that removes what its locks under a prefix leave in
// the store once nothing holds or waits there: the directories
// ZooKeeper keeps, the rows SQL keeps. Test and drill harnesses call it
// between runs. Tokens must stay monotonic after it: an engine whose
// token lives in what Purge removes is no Purger.
type Purger interface {
	Purge(ctx context.Context, prefix string) error
}

// Power returns c's Conn as P, an optional power of the Conn such as
// Lister or Purger; ok is false when c's Conn lacks it. Unlike baton.As,
// which hands users the engine's own client, it finds what only
// programs driving engines generically (the CLI) ask of a Conn.
func Power[P any](c *baton.Client) (P, bool) {
	var zero P
	a, ok := baton.As[adapter](c)
	if !ok {
		return zero, false
	}
	p, ok := a.Conn.(P)
	return p, ok
}
