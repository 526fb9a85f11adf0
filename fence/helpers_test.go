package fence_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/baton-go/baton/batontest/testenv"
	"github.com/baton-go/baton/engine"
	"github.com/baton-go/baton/fence"

	_ "github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite"
)

// sqliteDSN is the DSN the package documentation recommends: writers wait
// for the lock instead of failing with SQLITE_BUSY, and BEGIN takes the
// write lock at once.
const sqliteDSN = "?_pragma=busy_timeout(5000)&_pragma=journal_mode(wal)&_pragma=synchronous(normal)&_txlock=immediate"

// backend is one real database with a fresh fence table and a business
// table ("biz": id, value, history) that the tests write under the fence.
type backend struct {
	db    *sql.DB
	table fence.Table
	biz   string
}

// forEachDB runs fn against SQLite (a temp file), PostgreSQL and MariaDB/
// MySQL (each skipped by hand, failed under CI when BATON_TEST_POSTGRES or
// BATON_TEST_MYSQL is missing).
func forEachDB(t *testing.T, fn func(t *testing.T, b backend)) {
	t.Helper()
	t.Run("sqlite", func(t *testing.T) {
		db, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "fence.db")+sqliteDSN)
		if err != nil {
			t.Fatalf("sql.Open(sqlite) = %v", err)
		}
		fn(t, setup(t, db))
	})
	forEachServerDB(t, fn)
}

// forEachServerDB is forEachDB without SQLite: the database servers, where
// transactions can run side by side.
func forEachServerDB(t *testing.T, fn func(t *testing.T, b backend)) {
	t.Helper()
	t.Run("postgres", func(t *testing.T) {
		url := testenv.Postgres(t)
		db, err := sql.Open("pgx", url)
		if err != nil {
			t.Fatalf("sql.Open(pgx) = %v", err)
		}
		fn(t, setup(t, db))
	})
	t.Run("mysql", func(t *testing.T) {
		fn(t, setup(t, openMySQL(t, "")))
	})
	// Affected rows count found rows, not changed rows: the setting that
	// breaks a fence built on "0 affected rows means stale".
	t.Run("mysql-foundrows", func(t *testing.T) {
		fn(t, setup(t, openMySQL(t, "clientFoundRows=true")))
	})
}

// openMySQL opens the test MariaDB/MySQL database with extra DSN
// parameters. The pool is closed by setup's cleanup (or by the caller).
func openMySQL(t *testing.T, params string) *sql.DB {
	t.Helper()
	dsn := testenv.MySQL(t)
	if params != "" {
		if strings.Contains(dsn, "?") {
			dsn += "&" + params
		} else {
			dsn += "?" + params
		}
	}
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatalf("sql.Open(mysql) = %v", err)
	}
	return db
}

// quote quotes one identifier (or schema.table) for d.
func quote(d fence.Dialect, name string) string {
	q := `"`
	if d == fence.MySQL {
		q = "`"
	}
	parts := strings.Split(name, ".")
	for i, p := range parts {
		parts[i] = q + p + q
	}
	return strings.Join(parts, ".")
}

// ph is the n-th placeholder of d.
func ph(d fence.Dialect, n int) string {
	if d == fence.Postgres {
		return "$" + strconv.Itoa(n)
	}
	return "?"
}

// setup creates uniquely named tables (tests share one PostgreSQL
// database) and drops them, with a fresh context, when the test ends.
func setup(t *testing.T, db *sql.DB) backend {
	t.Helper()
	ctx := t.Context()
	suffix := engine.NewOwnerID()[:12]
	b := backend{db: db, biz: "fence_biz_" + suffix}
	t.Cleanup(func() {
		ctx := context.Background()
		for _, tbl := range []string{b.table.Name, b.biz} {
			if _, err := db.ExecContext(ctx, `DROP TABLE IF EXISTS `+tbl); err != nil {
				t.Errorf("DROP TABLE %s = %v", tbl, err)
			}
		}
		_ = db.Close()
	})
	d, err := fence.DialectOf(db)
	if err != nil {
		t.Fatalf("DialectOf = %v", err)
	}
	b.table = fence.Table{Name: "fence_tokens_" + suffix, Dialect: d}
	if err := b.table.Migrate(ctx, db); err != nil {
		t.Fatalf("Migrate = %v", err)
	}
	ddl := `CREATE TABLE ` + b.biz + ` (id TEXT PRIMARY KEY, value TEXT NOT NULL, history TEXT NOT NULL)`
	if d == fence.MySQL {
		ddl = `CREATE TABLE ` + b.biz + ` (id VARBINARY(1024) PRIMARY KEY, value TEXT NOT NULL, history LONGTEXT NOT NULL)`
	}
	if _, err := db.ExecContext(ctx, ddl); err != nil {
		t.Fatalf("create business table = %v", err)
	}
	return b
}

// put sets the business row id to value inside tx and appends value to its
// history. Fenced writers hold the fence row lock until commit, so the
// history lists accepted writes in commit order.
func (b backend) put(ctx context.Context, tx *sql.Tx, id, value string) error {
	if b.table.Dialect == fence.MySQL {
		_, err := tx.ExecContext(ctx, `INSERT INTO `+b.biz+` (id, value, history) VALUES (?, ?, ?)
ON DUPLICATE KEY UPDATE history = CONCAT(history, ',', VALUES(value)), value = VALUES(value)`, id, value, value)
		return err
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO `+b.biz+` (id, value, history) VALUES ($1, $2, $2)
ON CONFLICT (id) DO UPDATE SET value = excluded.value, history = `+b.biz+`.history || ',' || excluded.value`, id, value)
	return err
}

// get returns the business row id's value and history ("", nil when absent).
func (b backend) get(t *testing.T, id string) (value string, history []string) {
	t.Helper()
	var h string
	err := b.db.QueryRowContext(t.Context(), `SELECT value, history FROM `+b.biz+` WHERE id = `+ph(b.table.Dialect, 1), id).Scan(&value, &h)
	if err == sql.ErrNoRows {
		return "", nil
	}
	if err != nil {
		t.Fatalf("read business row %q = %v", id, err)
	}
	return value, strings.Split(h, ",")
}

// current returns the stored fence of resource, failing the test on error.
func (b backend) current(t *testing.T, resource string) (uint64, string) {
	t.Helper()
	tok, owner, err := b.table.Current(t.Context(), b.db, resource)
	if err != nil {
		t.Fatalf("Current(%q) = %v", resource, err)
	}
	return tok, owner
}

// write is one fenced business write through f: the fence, then the row.
func (b backend) write(ctx context.Context, f fence.Fence, resource string, token uint64, owner, value string) error {
	tx, err := b.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := f.Advance(ctx, tx, resource, token, owner); err != nil {
		return err
	}
	if err := b.put(ctx, tx, resource, value); err != nil {
		return err
	}
	return tx.Commit()
}
