package sqllock

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/engine"
	"github.com/baton-go/baton/fence"
)

// row is one owned row of a lock, as inspectRows reads it: a holder's
// grant or a waiter's intent (the table's layout is in the package doc).
type row struct {
	// Slot is 0 for a mutex's row, ≥ 1 for the rows of the other recipes.
	Slot int64
	// Kind is the row's kind as stored: a holder's "mutex", "read",
	// "write", "permit" or "leader", or a waiter's intent: "mwait",
	// "rwait", "wwait", "swait" or "cwait".
	Kind string
	// Owner is the random identity of the grant (or of the waiting
	// acquire); a lease's Owner().
	Owner string
	// Token is a holder's fencing token, or a waiter's ticket: waiters
	// are served in ticket order.
	Token uint64
	// ExpiresAt is the lease's (or the intent's) deadline on the database
	// clock, in UTC.
	ExpiresAt time.Time
	// Left is ExpiresAt minus the database clock's now when the row was
	// read; ≤ 0 means expired: the row is free to the next acquire (an
	// intent's waiter is gone).
	Left time.Duration
	// Process is the holder record the grant (or the waiter) stored: zero
	// for a row an older version wrote, or a table that predates the
	// record (until Migrate adds its column).
	Process baton.Process

	data string // the data column: a semaphore's N, a candidate's ID
}

// Waiting reports whether r is a waiter's intent rather than a holder's
// grant.
func (r row) Waiting() bool { return strings.HasSuffix(r.Kind, "wait") }

// Recipe names what r holds or waits for: "mutex", "read", "write",
// "permit" or "leader" (a waiting "wwait" is a "write").
func (r row) Recipe() string {
	switch r.Kind {
	case "mwait":
		return "mutex"
	case "rwait":
		return "read"
	case "wwait":
		return "write"
	case "swait":
		return "permit"
	case "cwait":
		return "leader"
	}
	return r.Kind
}

// inspectRows returns the owned rows of name, read-only, with their deadlines
// on the database clock: the holders by slot, then the waiters' intents in
// the order they will be served (by ticket). Expired rows nobody took yet
// are included, with Left ≤ 0. A mutex waiter keeps an intent row on
// PostgreSQL and MySQL only: SQLite's mutex waiters are not listed.
//
// It runs no DDL, whatever Options.NoMigrate says: when the table does
// not exist yet (nothing was ever locked there) it returns no rows, and on
// a table that predates the holder record its rows have no Process. It is
// for operators (`baton inspect`); a program deciding whether to act must
// not trust a read that is stale once returned. Its errors, but for an
// invalid name, wrap baton.ErrUnavailable or baton.ErrAuth (Classify).
func (c *Client) inspectRows(ctx context.Context, name string) ([]row, error) {
	n, err := engine.ValidateName(name)
	if err != nil {
		return nil, err
	}
	out, err := c.inspect(ctx, n)
	if err != nil {
		return nil, Classify(fmt.Errorf("sqllock: inspect %q: %w", n, err))
	}
	return out, nil
}

// inspect is inspectRows of the valid name n.
func (c *Client) inspect(ctx context.Context, n string) ([]row, error) {
	d := c.o.Dialect
	t := c.table() // validated at New: a plain identifier
	var shape int
	if err := c.db.QueryRowContext(ctx, tableShapeSQL(d), t, t).Scan(&shape); err != nil {
		return nil, err
	}
	if shape&tableExists == 0 {
		return nil, nil
	}
	rows, err := c.db.QueryContext(ctx, inspectSQL(d, t, shape), n)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []row
	for rows.Next() {
		var (
			r          row
			holder     sql.NullString
			exp, leftU int64 // µs
		)
		if err := rows.Scan(&r.Slot, &r.Kind, &r.Owner, &r.Token, &r.data, &holder, &exp, &leftU); err != nil {
			return nil, err
		}
		r.ExpiresAt, r.Left = time.UnixMicro(exp).UTC(), time.Duration(leftU)*time.Microsecond
		r.Process = engine.ParseProcess(holder.String)
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	slices.SortStableFunc(out, func(a, b row) int {
		switch wa, wb := a.Waiting(), b.Waiting(); {
		case wa != wb && wa:
			return 1
		case wa != wb:
			return -1
		case wa:
			return cmp.Compare(a.Token, b.Token)
		}
		return 0 // holders keep the query's slot order
	})
	return out, nil
}

// The bits of tableShapeSQL's answer: whether the locks table exists, and
// which of the columns that came after its first version it has.
const (
	tableExists = 1 << iota
	hasHolder
	hasData
)

// tableShapeSQL reads, as tableExists | hasHolder | hasData, whether the
// table named by its two parameters (the same name twice) exists where the
// client's statements find it (the search path, the connection's
// database, the main SQLite file) and which of its later columns it has.
func tableShapeSQL(d fence.Dialect) string {
	cols := `COALESCE(SUM(CASE %s WHEN 'holder' THEN 2 WHEN 'data' THEN 4 ELSE 0 END), 0)`
	switch d {
	case fence.Postgres:
		return `SELECT CASE WHEN to_regclass($1) IS NULL THEN 0 ELSE 1 + (SELECT ` + fmt.Sprintf(cols, "attname::text") + `
	FROM pg_attribute WHERE attrelid = to_regclass($2) AND NOT attisdropped) END`
	case fence.MySQL:
		return `SELECT (SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = ?) +
	(SELECT ` + fmt.Sprintf(cols, "LOWER(column_name)") + ` FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = ?)`
	}
	return `SELECT (SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = ?) +
	(SELECT ` + fmt.Sprintf(cols, "name") + ` FROM pragma_table_info(?))`
}

// inspectSQL reads name's owned rows with their data and holder record
// (empty and NULL where shape says the table lacks the column), and
// expires_at and its distance from the database clock's now, both in µs.
func inspectSQL(d fence.Dialect, table string, shape int) string {
	cols := `slot, kind, owner, token, `
	if shape&hasData != 0 {
		cols += `data, `
	} else {
		cols += `'', `
	}
	if shape&hasHolder != 0 {
		cols += `holder, `
	} else {
		cols += `NULL, `
	}
	switch d {
	case fence.Postgres:
		return `SELECT ` + cols + `
	(extract(epoch FROM expires_at) * 1000000)::bigint,
	(extract(epoch FROM (expires_at - clock_timestamp())) * 1000000)::bigint
FROM ` + table + ` WHERE name = $1 AND owner <> '' ORDER BY slot`
	case fence.MySQL:
		return `SELECT ` + cols + `
	TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', expires_at),
	TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), expires_at)
FROM ` + table + ` WHERE name = ? AND owner <> '' ORDER BY slot`
	}
	// SQLite stores expires_at as µs since the epoch.
	return `SELECT ` + cols + ` expires_at,
	expires_at - CAST((julianday('now') - 2440587.5) * 86400000000.0 AS INTEGER)
FROM ` + table + ` WHERE name = ? AND owner <> '' ORDER BY slot`
}
