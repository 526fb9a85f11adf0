package fence

import (
	"context"
	"database/sql"
)

// Unfenced is the twin of Table without the fence: Advance always accepts
// and records the incoming (token, owner) in the same table, even when it
// is lower than the stored one, exactly as an application that "holds the
// lock, so writes" would. It exists for negative controls: the same
// scenario run against Unfenced must go wrong (a late, stale write lands
// and the stored token moves backwards), which proves a test can tell
// fenced from unfenced. Never use it to protect data.
//
// It validates its arguments like Table, so only the rule differs.
type Unfenced struct {
	Table Table
}

var _ Fence = Unfenced{}

// Migrate creates the table, as Table.Migrate.
func (u Unfenced) Migrate(ctx context.Context, q Querier) error { return u.Table.Migrate(ctx, q) }

// Advance records (token, owner) for resource unconditionally and never
// returns baton.ErrStaleToken.
func (u Unfenced) Advance(ctx context.Context, tx *sql.Tx, resource string, token uint64, owner string) error {
	return u.Table.advance(ctx, tx, resource, token, owner, true)
}

// Current returns the last recorded (token, owner), as Table.Current.
func (u Unfenced) Current(ctx context.Context, q Querier, resource string) (uint64, string, error) {
	return u.Table.Current(ctx, q, resource)
}

// Write is Table.Write without the fence: fn always runs.
func (u Unfenced) Write(ctx context.Context, db *sql.DB, resource string, token uint64, owner string, fn func(tx *sql.Tx) error) error {
	return write(ctx, db, u, resource, token, owner, fn)
}
