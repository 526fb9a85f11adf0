package idem_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/baton-go/baton/batontest/testenv"
	"github.com/baton-go/baton/engine"
	"github.com/baton-go/baton/idem"

	_ "github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite"
)

// sqliteDSN: writers wait for the lock instead of failing with SQLITE_BUSY,
// and BEGIN takes the write lock at once.
const sqliteDSN = "?_pragma=busy_timeout(5000)&_pragma=journal_mode(wal)&_txlock=immediate"

type backend struct {
	name   string // sqlite, postgres, mariadb
	db     *sql.DB
	store  *idem.Store
	suffix string // for the test's own table names
}

// forEachDB runs fn on SQLite (a temp file), PostgreSQL and MariaDB/MySQL
// (skipped by hand, failed under CI when the server is not configured),
// each with a fresh idempotency table built with opt (Table is set here).
func forEachDB(t *testing.T, opt idem.Options, fn func(t *testing.T, b backend)) {
	t.Helper()
	for _, name := range []string{"sqlite", "postgres", "mariadb"} {
		t.Run(name, func(t *testing.T) {
			var db *sql.DB
			switch name {
			case "sqlite":
				db = openDB(t, "sqlite", "file:"+filepath.Join(t.TempDir(), "idem.db")+sqliteDSN)
			case "postgres":
				db = openDB(t, "pgx", testenv.Postgres(t))
			case "mariadb":
				db = openDB(t, "mysql", testenv.MySQL(t))
			}
			b := backend{name: name, db: db, suffix: engine.NewOwnerID()[:12]}
			opt := opt
			opt.Table = "idem_" + b.suffix
			dropLater(t, db, opt.Table)
			s, err := idem.New(db, opt)
			if err != nil {
				t.Fatalf("idem.New = %v", err)
			}
			if err := s.Migrate(t.Context()); err != nil {
				t.Fatalf("Migrate = %v", err)
			}
			b.store = s
			fn(t, b)
		})
	}
}

func openDB(t *testing.T, driver, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatalf("sql.Open(%s) = %v", driver, err)
	}
	t.Cleanup(func() { _ = db.Close() })
	if err := db.PingContext(t.Context()); err != nil {
		t.Fatalf("ping %s = %v", driver, err)
	}
	return db
}

// dropLater drops table when the test ends, with a fresh context.
func dropLater(t *testing.T, db *sql.DB, table string) {
	t.Cleanup(func() {
		if _, err := db.ExecContext(context.Background(), `DROP TABLE IF EXISTS `+table); err != nil {
			t.Errorf("DROP TABLE %s = %v", table, err)
		}
	})
}

// exec runs a statement of the test's own, failing the test on error.
func exec(t *testing.T, db *sql.DB, q string, args ...any) int64 {
	t.Helper()
	res, err := db.ExecContext(t.Context(), q, args...)
	if err != nil {
		t.Fatalf("%s = %v", q, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		t.Fatalf("%s: RowsAffected = %v", q, err)
	}
	return n
}

// ph returns the n-th placeholder for the backend's driver.
func (b backend) ph(n int) string {
	if b.name == "postgres" {
		return "$" + string(rune('0'+n))
	}
	return "?"
}
