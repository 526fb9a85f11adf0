package fence

import (
	"context"
	"database/sql"
	"strings"
)

// mysql is the MySQL/MariaDB dialect (github.com/go-sql-driver/mysql).
//
// Column types are binary on purpose: the default collations of MySQL and
// MariaDB compare text case-insensitively and ignore trailing spaces, so
// owner "A" would pass as owner "a" and resource "x " would be resource
// "x". VARBINARY and BLOB compare bytes. The resource key is VARBINARY(1024)
// (MaxResourceLen) so it fits InnoDB's 3072-byte index limit.
var mysql = dialect{
	quote: func(ident string) string { return "`" + ident + "`" },
	param: func(int) string { return "?" },
	// NOW(6) is the statement's start time with microseconds; unlike
	// PostgreSQL's now() it moves within a transaction.
	now: "NOW(6)",
	create: func(table string) string {
		return `CREATE TABLE IF NOT EXISTS ` + table + ` (
	resource   VARBINARY(1024) NOT NULL PRIMARY KEY,
	token      BIGINT NOT NULL CHECK (token >= 0),
	owner      VARBINARY(1024) NOT NULL,
	updated_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6)
) ENGINE=InnoDB`
	},
	lockRead:  " FOR UPDATE",
	advance:   advanceMySQL,
	tokenType: "BIGINT",
	// BLOB, not VARBINARY: a business table's row size limit (65535
	// bytes) counts VARBINARY columns in full, BLOBs hardly at all.
	ownerType: "BLOB",
	columnExists: `SELECT count(*) FROM information_schema.columns
WHERE table_schema = COALESCE(?, DATABASE()) AND table_name = ? AND column_name = ?`,
	keyType: "VARBINARY(1024)",
	ensureRow: func(table, cols, params string) string {
		// Not INSERT IGNORE: that also turns real errors (bad values,
		// truncation) into warnings.
		first, _, _ := strings.Cut(cols, ",")
		return `INSERT INTO ` + table + ` (` + cols + `) VALUES (` + params + `) ON DUPLICATE KEY UPDATE ` + first + ` = ` + first
	},
}

// advanceMySQL is the fence on MySQL and MariaDB, which have no RETURNING
// on INSERT … ON DUPLICATE KEY UPDATE (MariaDB's INSERT … RETURNING does
// not cover the update path) and no WHERE on the update part.
//
// Step 1 is one upsert whose update part keeps every column unless the
// rule accepts. MySQL evaluates the assignments left to right and each
// sees the columns as already assigned, so the conditions read only token,
// which is assigned last, and owner is compared before it changes:
// updated_at moves for any accepted write; owner and token move only for a
// greater token (for an equal token from the same owner they are already
// right). Either way InnoDB keeps the row exclusively locked until the
// transaction ends, exactly as PostgreSQL's ON CONFLICT does, so the
// fenced writers of one resource commit one at a time.
//
// Step 2 reads the row back with FOR UPDATE (a locking read sees the
// latest committed version, not the REPEATABLE READ snapshot, and we hold
// the lock already, so it cannot wait): the write was accepted exactly
// when the row now holds (token, owner). A rejected write leaves a greater
// token or another owner, and an accepted one always leaves ours.
//
// The affected-rows count is deliberately not used: it is 1 for an
// insert, 2 for an update and 0 for an unchanged row, but with the
// CLIENT_FOUND_ROWS flag (go-sql-driver's clientFoundRows=true, set by many
// ORMs) an unchanged duplicate counts 1, so "0 means stale" would turn
// into "stale looks like an insert". Reading the row back is right under
// both settings, at the price of a second round trip.
//
// Concurrent first writes of a new resource serialise on the primary key:
// the second waits for the first to commit and then takes the update path.
// InnoDB can still pick a deadlock victim among several waiters (error
// 1213): retry the transaction, as with PostgreSQL's serialization errors.
func advanceMySQL(ctx context.Context, tx *sql.Tx, d *dialect, table, resource string, token int64, owner string, force bool) (bool, error) {
	q := `INSERT INTO ` + table + ` (resource, token, owner, updated_at) VALUES (?, ?, ?, NOW(6))
ON DUPLICATE KEY UPDATE `
	args := []any{resource, token, owner}
	if force {
		q += `updated_at = NOW(6), owner = ?, token = ?`
		args = append(args, owner, token)
	} else {
		q += `updated_at = IF(token < ? OR (token = ? AND owner = ?), NOW(6), updated_at),
	owner = IF(token < ?, ?, owner),
	token = IF(token < ?, ?, token)`
		args = append(args, token, token, owner, token, owner, token, token)
	}
	if _, err := tx.ExecContext(ctx, q, args...); err != nil {
		return false, err
	}
	if force {
		return true, nil
	}
	var gotToken int64
	var gotOwner string
	err := tx.QueryRowContext(ctx, `SELECT token, owner FROM `+table+` WHERE resource = ? FOR UPDATE`, resource).Scan(&gotToken, &gotOwner)
	if err != nil {
		return false, err
	}
	return gotToken == token && gotOwner == owner, nil
}
