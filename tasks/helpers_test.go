package tasks_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/baton-go/baton/batontest/testenv"
	"github.com/baton-go/baton/engine"
	"github.com/baton-go/baton/tasks"

	_ "github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite"
)

// sqliteDSN: writers wait for the lock instead of failing with SQLITE_BUSY.
const sqliteDSN = "?_pragma=busy_timeout(5000)&_pragma=journal_mode(wal)&_txlock=immediate"

type backend struct {
	db    *sql.DB
	store *tasks.Store
	table string
}

// forEachDB runs fn on SQLite (a temp file), PostgreSQL and MariaDB/MySQL
// (skipped by hand, failed under CI when the server is not configured),
// each with a fresh task table whose leases last lease.
func forEachDB(t *testing.T, lease time.Duration, fn func(t *testing.T, b backend)) {
	t.Helper()
	open := map[string]func(t *testing.T) *sql.DB{
		"sqlite": func(t *testing.T) *sql.DB {
			return openDB(t, "sqlite", "file:"+filepath.Join(t.TempDir(), "tasks.db")+sqliteDSN)
		},
		"postgres": func(t *testing.T) *sql.DB { return openDB(t, "pgx", testenv.Postgres(t)) },
		"mariadb":  func(t *testing.T) *sql.DB { return openDB(t, "mysql", testenv.MySQL(t)) },
	}
	for _, name := range []string{"sqlite", "postgres", "mariadb"} {
		t.Run(name, func(t *testing.T) {
			db := open[name](t)
			table := "tasks_" + engine.NewOwnerID()[:12]
			t.Cleanup(func() {
				if _, err := db.ExecContext(context.Background(), `DROP TABLE IF EXISTS `+table); err != nil {
					t.Errorf("DROP TABLE %s = %v", table, err)
				}
			})
			s, err := tasks.New(db, tasks.Options{Table: table, Lease: lease})
			if err != nil {
				t.Fatalf("tasks.New = %v", err)
			}
			if err := s.Migrate(t.Context()); err != nil {
				t.Fatalf("Migrate = %v", err)
			}
			fn(t, backend{db: db, store: s, table: table})
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

// waitExpired polls Expired (the database's clock decides) until key is
// listed, and returns its snapshot.
func waitExpired(t *testing.T, s *tasks.Store, key string) tasks.Task {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		list, err := s.Expired(t.Context(), 100)
		if err != nil {
			t.Fatalf("Expired = %v", err)
		}
		for _, task := range list {
			if task.Key == key {
				return task
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("Expired never listed %q", key)
	return tasks.Task{}
}

// summary is a task written as STATE/owner/epoch/vVERSION.
func summary(task tasks.Task) string {
	return fmt.Sprintf("%s/%s/%d/v%d", task.State, task.Owner, task.Epoch, task.Version)
}

func get(t *testing.T, s *tasks.Store, key string) tasks.Task {
	t.Helper()
	task, err := s.Get(t.Context(), key)
	if err != nil {
		t.Fatalf("Get(%q) = %v", key, err)
	}
	return task
}
