package sqllock

import (
	"context"
	"fmt"

	"github.com/baton-go/baton/engine"
	"github.com/baton-go/baton/fence"
)

var _ engine.Purger = conn{}

// Purge deletes the rows of every lock name under prefix. The tokens
// stay monotonic: they come from the tokens table or a sequence, which
// Purge leaves alone, not from the rows.
func (k conn) Purge(ctx context.Context, prefix string) error {
	p := "?"
	if k.c.q.d == fence.Postgres {
		p = "$1"
	}
	under := prefix + "/"
	// substr, not LIKE: a prefix may hold % or _, and substr is spelled
	// alike by PostgreSQL, MySQL and SQLite.
	q := fmt.Sprintf("DELETE FROM %s WHERE substr(name, 1, %d) = %s", k.c.q.locks, len(under), p)
	if _, err := k.c.db.ExecContext(ctx, q, under); err != nil {
		return Classify(fmt.Errorf("remove the rows under %s: %w", prefix, err))
	}
	return nil
}
