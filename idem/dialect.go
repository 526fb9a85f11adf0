package idem

import (
	"database/sql"
	"fmt"
	"strconv"
	"strings"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/fence"
)

// flavor is what this package needs to know about one SQL dialect. The
// statements are written once with ? placeholders and rebound for
// PostgreSQL; only the column types, the clock and the insert-if-absent
// differ.
type flavor struct {
	dialect fence.Dialect
	// nowUS is the database clock in microseconds since the Unix epoch.
	// Times are stored as such integers on every dialect: no time zone
	// (MySQL DATETIME has none), no driver-specific time parsing, and every
	// comparison made by the database against its own clock.
	nowUS string
	// keyType, ownerType, blobType are the column types of the key, the
	// owner and the result. MySQL uses VARBINARY so keys compare byte for
	// byte: under the default case-insensitive collation "A" and "a" would
	// be one idempotency key there and two everywhere else.
	keyType, ownerType, blobType string
	// insertIgnore turns INSERT INTO … VALUES … into an insert that does
	// nothing when the primary key exists.
	insertIgnore func(insert string) string
	tableSuffix  string // after CREATE TABLE (…)
	quote        func(string) string
	inlineIndex  bool // MySQL has no CREATE INDEX IF NOT EXISTS: declare it in the table
}

func quoteDouble(s string) string   { return `"` + s + `"` }
func quoteBacktick(s string) string { return "`" + s + "`" }

var (
	postgres = flavor{
		dialect: fence.Postgres,
		// clock_timestamp, not now(): now() is the transaction's start.
		nowUS:        `CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000000 AS BIGINT)`,
		keyType:      "TEXT",
		ownerType:    "TEXT",
		blobType:     "BYTEA",
		insertIgnore: func(s string) string { return s + ` ON CONFLICT DO NOTHING` },
		quote:        quoteDouble,
	}
	sqlite = flavor{
		dialect:      fence.SQLite,
		nowUS:        `CAST((julianday('now') - 2440587.5) * 86400000000.0 AS INTEGER)`,
		keyType:      "TEXT",
		ownerType:    "TEXT",
		blobType:     "BLOB",
		insertIgnore: func(s string) string { return s + ` ON CONFLICT DO NOTHING` },
		quote:        quoteDouble,
	}
	mysql = flavor{
		dialect: fence.MySQL,
		// UNIX_TIMESTAMP of NOW(6) is independent of the session time zone.
		nowUS:     `CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED)`,
		keyType:   "VARBINARY(1024)",
		ownerType: "VARBINARY(255)",
		blobType:  "LONGBLOB",
		// INSERT IGNORE also downgrades other errors to warnings; every
		// value is validated before it is sent, so only the duplicate key
		// is left to ignore. ON DUPLICATE KEY UPDATE would be stricter but
		// reports 1 affected row for an unchanged duplicate under
		// clientFoundRows=true.
		insertIgnore: func(s string) string { return "INSERT IGNORE" + strings.TrimPrefix(s, "INSERT") },
		tableSuffix:  ` ENGINE=InnoDB`,
		quote:        quoteBacktick,
		inlineIndex:  true,
	}
)

// flavorOf picks the flavour for d, or recognises it from db's driver when
// d is zero (fence.DialectOf).
func flavorOf(db *sql.DB, d fence.Dialect) (*flavor, error) {
	if d == 0 {
		var err error
		if d, err = fence.DialectOf(db); err != nil {
			return nil, fmt.Errorf("idem: set Options.Dialect: %w", err)
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
	return nil, invalid("unknown dialect %v", d)
}

// rebind turns the ? placeholders of q into $1, $2, … for PostgreSQL. The
// statements of this package never contain a ? anywhere else.
func (f *flavor) rebind(q string) string {
	if f.dialect != fence.Postgres {
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

// tableName validates name (an identifier, or schema.table) and returns it
// quoted, and the bare last part for naming the index. Identifiers are
// letters, digits and underscores, at most 63 bytes, not starting with a
// digit: nothing else reaches the SQL text.
func (f *flavor) tableName(name string) (quoted, last string, err error) {
	parts := strings.Split(name, ".")
	if len(parts) > 2 {
		return "", "", invalid("table name %q: at most schema.table", name)
	}
	q := make([]string, len(parts))
	for i, p := range parts {
		if !validIdent(p) {
			return "", "", invalid("table name %q: %q is not an identifier of letters, digits and _ (at most 63 bytes, not starting with a digit)", name, p)
		}
		q[i] = f.quote(p)
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

func invalid(format string, args ...any) error {
	return fmt.Errorf("idem: "+format+": %w", append(args, baton.ErrInvalidOption)...)
}
