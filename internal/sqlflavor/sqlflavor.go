// Package sqlflavor holds what baton's SQL-backed packages (idem, tasks)
// need to know about one SQL dialect: statements are written once with ?
// placeholders and rebound for PostgreSQL; only the column types, the
// database clock and the insert-if-absent differ.
package sqlflavor

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/fence"
)

// Flavor is one SQL dialect as the statements of idem and tasks see it.
type Flavor struct {
	Dialect fence.Dialect
	// NowUS is the database clock in microseconds since the Unix epoch.
	// Times are stored as such integers on every dialect: no time zone
	// (MySQL DATETIME has none), no driver-specific time parsing, and every
	// comparison made by the database against its own clock.
	NowUS string
	// KeyType, OwnerType, BlobType are the column types of the key, the
	// owner and the result. MySQL uses VARBINARY so keys compare byte for
	// byte: under the default case-insensitive collation "A" and "a" would
	// be one idempotency key there and two everywhere else.
	KeyType, OwnerType, BlobType string
	// InsertIgnore turns INSERT INTO … VALUES … into an insert that does
	// nothing when the primary key exists.
	InsertIgnore func(insert string) string
	TableSuffix  string // after CREATE TABLE (…)
	Quote        func(string) string
	InlineIndex  bool // MySQL has no CREATE INDEX IF NOT EXISTS: declare it in the table
}

func quoteDouble(s string) string   { return `"` + s + `"` }
func quoteBacktick(s string) string { return "`" + s + "`" }

var (
	postgres = Flavor{
		Dialect: fence.Postgres,
		// clock_timestamp, not now(): now() is the transaction's start.
		NowUS:        `CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000000 AS BIGINT)`,
		KeyType:      "TEXT",
		OwnerType:    "TEXT",
		BlobType:     "BYTEA",
		InsertIgnore: func(s string) string { return s + ` ON CONFLICT DO NOTHING` },
		Quote:        quoteDouble,
	}
	sqlite = Flavor{
		Dialect:      fence.SQLite,
		NowUS:        `CAST((julianday('now') - 2440587.5) * 86400000000.0 AS INTEGER)`,
		KeyType:      "TEXT",
		OwnerType:    "TEXT",
		BlobType:     "BLOB",
		InsertIgnore: func(s string) string { return s + ` ON CONFLICT DO NOTHING` },
		Quote:        quoteDouble,
	}
	mysql = Flavor{
		Dialect: fence.MySQL,
		// UNIX_TIMESTAMP of NOW(6) is independent of the session time zone.
		NowUS:     `CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED)`,
		KeyType:   "VARBINARY(1024)",
		OwnerType: "VARBINARY(255)",
		BlobType:  "LONGBLOB",
		// INSERT IGNORE also downgrades other errors to warnings; every
		// value is validated before it is sent, so only the duplicate key
		// is left to ignore. ON DUPLICATE KEY UPDATE would be stricter but
		// reports 1 affected row for an unchanged duplicate under
		// clientFoundRows=true.
		InsertIgnore: func(s string) string { return "INSERT IGNORE" + strings.TrimPrefix(s, "INSERT") },
		TableSuffix:  ` ENGINE=InnoDB`,
		Quote:        quoteBacktick,
		InlineIndex:  true,
	}
)

// Of picks the flavour for d, or recognises it from db's driver when d is
// zero (fence.DialectOf). pkg prefixes error messages.
func Of(db *sql.DB, d fence.Dialect, pkg string) (*Flavor, error) {
	if d == 0 {
		var err error
		if d, err = fence.DialectOf(db); err != nil {
			return nil, fmt.Errorf("%s: set Options.Dialect: %w", pkg, err)
		}
	}
	switch d {
	case fence.Postgres:
		return &postgres, nil
	case fence.SQLite:
		return &sqlite, nil
	case fence.MySQL:
		return &mysql, nil
	}
	return nil, Invalid(pkg, "unknown dialect %v", d)
}

// Rebind turns the ? placeholders of q into $1, $2, … for PostgreSQL. The
// statements never contain a ? anywhere else.
func (f *Flavor) Rebind(q string) string {
	if f.Dialect != fence.Postgres {
		return q
	}
	var b strings.Builder
	n := 0
	for _, r := range q {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// TableName validates name (an identifier, or schema.table) and returns it
// quoted, and the bare last part for naming the index. Identifiers are
// letters, digits and underscores, at most 63 bytes, not starting with a
// digit: nothing else reaches the SQL text.
func (f *Flavor) TableName(pkg, name string) (quoted, last string, err error) {
	parts := strings.Split(name, ".")
	if len(parts) > 2 {
		return "", "", Invalid(pkg, "table name %q: at most schema.table", name)
	}
	q := make([]string, len(parts))
	for i, p := range parts {
		if !validIdent(p) {
			return "", "", Invalid(pkg, "table name %q: %q is not an identifier of letters, digits and _ (at most 63 bytes, not starting with a digit)", name, p)
		}
		q[i] = f.Quote(p)
	}
	return strings.Join(q, "."), parts[len(parts)-1], nil
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

// Invalid returns an error of package pkg wrapping baton.ErrInvalidOption.
func Invalid(pkg, format string, args ...any) error {
	return fmt.Errorf(pkg+": "+format+": %w", append(args, baton.ErrInvalidOption)...)
}

// ExecOne runs q (rebound for the dialect) and reports whether it changed
// exactly one row. Callers' UPDATEs always change a version or flag
// column, so MySQL's "changed rows" count equals the matched rows whatever
// clientFoundRows is.
func (f *Flavor) ExecOne(ctx context.Context, db *sql.DB, q string, args ...any) (bool, error) {
	res, err := db.ExecContext(ctx, f.Rebind(q), args...)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, err
	}
	return n == 1, nil
}

// CheckKey validates a record key of package pkg: non-empty UTF-8 text
// without NUL, at most max bytes.
func CheckKey(pkg, key string, max int) error {
	switch {
	case key == "":
		return Invalid(pkg, "empty key")
	case len(key) > max:
		return Invalid(pkg, "key longer than %d bytes", max)
	case !utf8.ValidString(key) || strings.IndexByte(key, 0) >= 0:
		return Invalid(pkg, "key %q is not valid UTF-8 text without NUL", key)
	}
	return nil
}

// CreateTable creates table (with cols) and an index on indexCols, if they
// do not exist. MySQL has no CREATE INDEX IF NOT EXISTS, so there the index
// is declared inside the table.
func (f *Flavor) CreateTable(ctx context.Context, db *sql.DB, pkg, table, cols, index, indexCols string) error {
	if f.InlineIndex {
		cols += ",\n\tINDEX " + index + " (" + indexCols + ")"
	}
	stmts := []string{"CREATE TABLE IF NOT EXISTS " + table + " (" + cols + "\n)" + f.TableSuffix}
	if !f.InlineIndex {
		stmts = append(stmts, "CREATE INDEX IF NOT EXISTS "+index+" ON "+table+" ("+indexCols+")")
	}
	for _, q := range stmts {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("%s: migrate %s: %w", pkg, table, err)
		}
	}
	return nil
}
