package fence

import (
	"context"
	"database/sql"
	"reflect"
	"strconv"
	"strings"
)

// Dialect names the SQL flavour a fence speaks. The zero value is no
// dialect: a *sql.Tx does not reveal its driver, so a Table must be told
// (directly, or once through DialectOf).
type Dialect int

// Dialects.
const (
	Postgres Dialect = iota + 1 // PostgreSQL 9.5+ (ON CONFLICT … DO UPDATE … WHERE)
	SQLite                      // SQLite 3.35+ (upsert with RETURNING)
	MySQL                       // MySQL 5.7+ / MariaDB 10.2+ (ON DUPLICATE KEY UPDATE, then a locking read)
)

// String returns the dialect's name ("postgres", "sqlite", "mysql").
func (d Dialect) String() string {
	switch d {
	case Postgres:
		return "postgres"
	case SQLite:
		return "sqlite"
	case MySQL:
		return "mysql"
	}
	return "Dialect(" + strconv.Itoa(int(d)) + ")"
}

// DialectOf recognises the dialect from the driver behind db, without
// importing any driver: PostgreSQL for github.com/jackc/pgx (v4, v5 stdlib)
// and github.com/lib/pq; SQLite for modernc.org/sqlite,
// github.com/mattn/go-sqlite3 and github.com/ncruces/go-sqlite3; MySQL for
// github.com/go-sql-driver/mysql (MySQL and MariaDB). Any other
// driver (including a wrapping one, such as a tracing driver) returns an
// error wrapping baton.ErrInvalidOption: set Table.Dialect yourself.
func DialectOf(db *sql.DB) (Dialect, error) {
	t := reflect.TypeOf(db.Driver())
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil {
		return 0, invalid("no driver")
	}
	switch p := t.PkgPath(); {
	case p == "github.com/jackc/pgx/v5/stdlib", p == "github.com/jackc/pgx/v4/stdlib", p == "github.com/lib/pq":
		return Postgres, nil
	case p == "modernc.org/sqlite", p == "github.com/mattn/go-sqlite3", strings.HasPrefix(p, "github.com/ncruces/go-sqlite3"):
		return SQLite, nil
	case p == "github.com/go-sql-driver/mysql":
		return MySQL, nil
	default:
		return 0, invalid("driver %s (%s) not recognised; set Table.Dialect", t.Name(), p)
	}
}

// dialect is what a fence needs to know about one SQL flavour. Schemes
// (the fencing_tokens table, business-row columns, the object pointer
// table) build their statements from it, and a dialect whose SQL cannot
// express the one-statement upsert (MySQL) supplies its own advance.
type dialect struct {
	quote  func(ident string) string // quotes one validated identifier part
	param  func(n int) string        // the n-th (1-based) placeholder
	now    string                    // the database clock, as an SQL expression
	create func(table string) string // CREATE TABLE IF NOT EXISTS for the token table
	// lockRead is appended to the read that explains a rejection: it must
	// see the latest committed row, not a transaction snapshot (MySQL's
	// REPEATABLE READ default would otherwise show an older version).
	lockRead string
	// tokenType and ownerType are the column types the row scheme adds to
	// a business table; both columns are nullable (NULL: never fenced).
	tokenType, ownerType string
	// columnExists counts the columns named $3 of table $2 in schema $1
	// (NULL: the current schema); it takes exactly three parameters.
	columnExists string
	// keyType is the type of a text primary key (the pointer table's name).
	keyType string
	// ensureRow inserts a row with the given key columns unless one exists,
	// without changing an existing row.
	ensureRow func(table, cols string, params string) string
	// advance stores (token, owner) for resource when the fence rule allows
	// it (or always, when force is set: the unfenced twin), and reports
	// whether it did. It must be one atomic step at the database.
	advance func(ctx context.Context, tx *sql.Tx, d *dialect, table, resource string, token int64, owner string, force bool) (bool, error)
}

func dialectFor(d Dialect) (*dialect, error) {
	switch d {
	case Postgres:
		return &postgres, nil
	case SQLite:
		return &sqlite, nil
	case MySQL:
		return &mysql, nil
	case 0:
		return nil, invalid("no dialect set (use DialectOf)")
	}
	return nil, invalid("unknown dialect %v", d)
}

func quoteDouble(ident string) string { return `"` + ident + `"` }

var postgres = dialect{
	quote: quoteDouble,
	param: func(n int) string { return "$" + strconv.Itoa(n) },
	// clock_timestamp, not now(): now() is the transaction's start, which
	// for a long transaction says little about when the fence moved.
	now: "clock_timestamp()",
	create: func(table string) string {
		return `CREATE TABLE IF NOT EXISTS ` + table + ` (
	resource   TEXT PRIMARY KEY,
	token      BIGINT NOT NULL CHECK (token >= 0),
	owner      TEXT NOT NULL,
	updated_at TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp()
)`
	},
	advance:   advanceUpsert,
	tokenType: "BIGINT",
	ownerType: "TEXT",
	columnExists: `SELECT count(*) FROM information_schema.columns
WHERE table_schema = COALESCE($1::text, current_schema()::text) AND table_name = $2 AND column_name = $3`,
	keyType:   "TEXT",
	ensureRow: ensureOnConflict,
}

func ensureOnConflict(table, cols, params string) string {
	return `INSERT INTO ` + table + ` (` + cols + `) VALUES (` + params + `) ON CONFLICT DO NOTHING`
}

var sqlite = dialect{
	quote: quoteDouble,
	param: func(int) string { return "?" },
	now:   `strftime('%Y-%m-%dT%H:%M:%fZ', 'now')`,
	create: func(table string) string {
		return `CREATE TABLE IF NOT EXISTS ` + table + ` (
	resource   TEXT NOT NULL PRIMARY KEY,
	token      INTEGER NOT NULL CHECK (token >= 0),
	owner      TEXT NOT NULL,
	updated_at TEXT NOT NULL
)`
	},
	advance:   advanceUpsert,
	tokenType: "INTEGER",
	ownerType: "TEXT",
	// pragma_table_info's hidden arguments are the table and the schema.
	columnExists: `SELECT count(*) FROM pragma_table_info(?2, COALESCE(?1, 'main')) WHERE name = ?3`,
	keyType:      "TEXT",
	ensureRow:    ensureOnConflict,
}

// advanceUpsert is the fence as one statement, for dialects with
// INSERT … ON CONFLICT … DO UPDATE … WHERE … RETURNING (PostgreSQL, SQLite).
//
// It is atomic under concurrency without any read-then-write: on
// PostgreSQL the conflicting row is locked and the WHERE re-evaluated
// against its latest committed version; a concurrent first insert of the
// same resource turns into the conflict path. The row lock is held until
// the transaction ends, so the fenced writers of one resource commit one
// at a time. On SQLite the statement runs under the database write lock.
// A row comes back only when the row was inserted or updated; none means
// stale.
func advanceUpsert(ctx context.Context, tx *sql.Tx, d *dialect, table, resource string, token int64, owner string, force bool) (bool, error) {
	q := `INSERT INTO ` + table + ` AS f (resource, token, owner, updated_at) VALUES (` +
		d.param(1) + `, ` + d.param(2) + `, ` + d.param(3) + `, ` + d.now + `)
ON CONFLICT (resource) DO UPDATE SET token = excluded.token, owner = excluded.owner, updated_at = excluded.updated_at`
	if !force {
		q += `
WHERE f.token < excluded.token OR (f.token = excluded.token AND f.owner = excluded.owner)`
	}
	q += `
RETURNING token`
	var got int64
	switch err := tx.QueryRowContext(ctx, q, resource, token, owner).Scan(&got); err {
	case nil:
		return true, nil
	case sql.ErrNoRows:
		return false, nil
	default:
		return false, err
	}
}

// tableName validates a table name (one identifier, or schema.table) and
// returns it quoted for the dialect. Identifiers are letters, digits and
// underscores, not starting with a digit, at most 63 bytes (PostgreSQL's
// limit): nothing else ever reaches the SQL text. Quoting keeps reserved
// words working and preserves case; on PostgreSQL use lowercase names so
// unquoted references in your own SQL find the same table.
func tableName(name string, d *dialect) (string, error) {
	if name == "" {
		name = DefaultTable
	}
	parts := strings.Split(name, ".")
	if len(parts) > 2 {
		return "", invalid("table name %q: at most schema.table", name)
	}
	for i, p := range parts {
		if !validIdent(p) {
			return "", invalid("table name %q: %q is not an identifier of letters, digits and _ (at most 63 bytes, not starting with a digit)", name, p)
		}
		parts[i] = d.quote(p)
	}
	return strings.Join(parts, "."), nil
}

func validIdent(s string) bool {
	if s == "" || len(s) > 63 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '_', 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case '0' <= c && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}
