package fence_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/fence"
	"github.com/baton-go/baton/internal/testenv"

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

// forEachDB runs fn against SQLite (a temp file) and PostgreSQL (skipped by
// hand, failed under CI when BATON_TEST_POSTGRES is missing).
func forEachDB(t *testing.T, fn func(t *testing.T, b backend)) {
	t.Helper()
	t.Run("sqlite", func(t *testing.T) {
		db, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "fence.db")+sqliteDSN)
		if err != nil {
			t.Fatalf("sql.Open(sqlite) = %v", err)
		}
		fn(t, setup(t, db))
	})
	t.Run("postgres", func(t *testing.T) {
		url := testenv.Postgres(t)
		db, err := sql.Open("pgx", url)
		if err != nil {
			t.Fatalf("sql.Open(pgx) = %v", err)
		}
		fn(t, setup(t, db))
	})
}

// setup creates uniquely named tables (tests share one PostgreSQL
// database) and drops them, with a fresh context, when the test ends.
func setup(t *testing.T, db *sql.DB) backend {
	t.Helper()
	ctx := t.Context()
	suffix := baton.NewOwnerID()[:12]
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
	if _, err := db.ExecContext(ctx, `CREATE TABLE `+b.biz+
		` (id TEXT PRIMARY KEY, value TEXT NOT NULL, history TEXT NOT NULL)`); err != nil {
		t.Fatalf("create business table = %v", err)
	}
	return b
}

// put sets the business row id to value inside tx and appends value to its
// history. Fenced writers hold the fence row lock until commit, so the
// history lists accepted writes in commit order.
func (b backend) put(ctx context.Context, tx *sql.Tx, id, value string) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO `+b.biz+` (id, value, history) VALUES ($1, $2, $2)
ON CONFLICT (id) DO UPDATE SET value = excluded.value, history = `+b.biz+`.history || ',' || excluded.value`, id, value)
	return err
}

// get returns the business row id's value and history ("", nil when absent).
func (b backend) get(t *testing.T, id string) (value string, history []string) {
	t.Helper()
	var h string
	err := b.db.QueryRowContext(t.Context(), `SELECT value, history FROM `+b.biz+` WHERE id = $1`, id).Scan(&value, &h)
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
