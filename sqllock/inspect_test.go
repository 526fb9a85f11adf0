package sqllock_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/batontest/testenv"
	"github.com/baton-go/baton/sqllock"
	"github.com/go-sql-driver/mysql"
)

// inspectDBs opens the three databases for the Inspect tests: SQLite in a
// temporary file, PostgreSQL and MariaDB when configured.
func inspectDBs(t *testing.T) map[string]func(t *testing.T) *sql.DB {
	return map[string]func(t *testing.T) *sql.DB{
		"sqlite": func(t *testing.T) *sql.DB {
			return openDB(t, "sqlite", "file:"+filepath.Join(t.TempDir(), "locks.db")+sqliteDSN)
		},
		"postgres": func(t *testing.T) *sql.DB { return openDB(t, "pgx", testenv.Postgres(t)) },
		"mysql": func(t *testing.T) *sql.DB {
			cfg, err := mysql.ParseDSN(testenv.MySQL(t))
			if err != nil {
				t.Fatalf("mysql.ParseDSN(BATON_TEST_MYSQL) = %v", err)
			}
			cfg.ParseTime, cfg.InterpolateParams = true, true
			return openDB(t, "mysql", cfg.FormatDSN())
		},
	}
}

// inspectClient returns a client on db whose tables have a prefix of their
// own (created at the first lock, not before), closed at cleanup.
func inspectClient(t *testing.T, db *sql.DB) *baton.Client {
	t.Helper()
	var b [4]byte
	_, _ = rand.Read(b[:])
	c, err := sqllock.New(db, sqllock.Options{TTL: testTTL, TablePrefix: "bi" + hex.EncodeToString(b[:]) + "_"})
	if err != nil {
		t.Fatalf("sqllock.New() = %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func inspect(t *testing.T, c *baton.Client, name string) []sqllock.Row {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	rows, err := sqllock.Of(c).Inspect(ctx, name)
	if err != nil {
		t.Fatalf("Inspect(%q) = %v", name, err)
	}
	return rows
}

// TestInspect reads a lock's rows: none before the table exists, the
// holder with its token and deadline, then a waiter's intent after the
// holder.
func TestInspect(t *testing.T) {
	for engine, open := range inspectDBs(t) {
		t.Run(engine, func(t *testing.T) {
			c := inspectClient(t, open(t))
			if rows := inspect(t, c, "inspect/none"); len(rows) != 0 {
				t.Fatalf("Inspect before any lock = %+v, want no rows (and no table created)", rows)
			}
			rw, err := c.RWMutex("inspect/rw")
			if err != nil {
				t.Fatalf("RWMutex() = %v", err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			w, err := rw.Lock(ctx)
			if err != nil {
				t.Fatalf("Lock() = %v", err)
			}
			defer func() { _ = w.Release(context.Background()) }()
			rows := inspect(t, c, "inspect/rw")
			if len(rows) != 1 {
				t.Fatalf("Inspect with a writer = %+v, want one row", rows)
			}
			h := rows[0]
			if h.Kind != "write" || h.Recipe() != "write" || h.Waiting() || h.Owner != w.Owner() || h.Token != w.Token() {
				t.Errorf("Inspect holder = %+v, want kind write, owner %q, token %d", h, w.Owner(), w.Token())
			}
			if h.Left <= 0 || h.Left > testTTL || h.ExpiresAt.Location() != time.UTC {
				t.Errorf("Inspect holder: Left %v, ExpiresAt %v, want 0 < Left ≤ %v and UTC", h.Left, h.ExpiresAt, testTTL)
			}
			// A reader queues behind the writer: its intent row comes
			// after the holder, as a waiting "read".
			rctx, stop := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() {
				l, err := rw.RLock(rctx)
				if err == nil {
					_ = l.Release(context.Background())
				}
				done <- err
			}()
			defer func() {
				stop()
				if err := <-done; !errors.Is(err, context.Canceled) {
					t.Errorf("RLock behind a writer = %v, want context.Canceled", err)
				}
			}()
			for end := time.Now().Add(5 * time.Second); len(rows) < 2 && time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
				rows = inspect(t, c, "inspect/rw")
			}
			if len(rows) != 2 || rows[0].Kind != "write" || !rows[1].Waiting() || rows[1].Recipe() != "read" {
				t.Fatalf("Inspect with a queued reader = %+v, want [write holder, read waiting]", rows)
			}
			if _, err := sqllock.Of(c).Inspect(ctx, "bad//name"); !errors.Is(err, baton.ErrInvalidName) {
				t.Errorf("Inspect(%q) = %v, want ErrInvalidName", "bad//name", err)
			}
		})
	}
}
