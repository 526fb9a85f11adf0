package sqllock_test

import (
	"database/sql"
	"os"
	"strings"
	"testing"
	"time"

	batonengine "github.com/baton-go/baton/engine"
	"github.com/baton-go/baton/sqllock"
)

// oldLocksTable is the locks table as the version before the holder
// record created it (table name %s), per backend.
var oldLocksTable = map[string]string{
	"postgres": `CREATE TABLE %s (
	name       text        NOT NULL,
	slot       integer     NOT NULL DEFAULT 0,
	kind       text        NOT NULL DEFAULT 'mutex',
	owner      text        NOT NULL DEFAULT '',
	token      bigint      NOT NULL DEFAULT 0,
	expires_at timestamptz NOT NULL,
	renewal    bigint      NOT NULL DEFAULT 0,
	data       text        NOT NULL DEFAULT '',
	PRIMARY KEY (name, slot))`,
	"mysql": `CREATE TABLE %s (
	name       VARBINARY(1024) NOT NULL,
	slot       INT             NOT NULL DEFAULT 0,
	kind       VARCHAR(16)     NOT NULL DEFAULT 'mutex',
	owner      VARCHAR(64)     NOT NULL DEFAULT '',
	token      BIGINT UNSIGNED NOT NULL DEFAULT 0,
	expires_at DATETIME(6)     NOT NULL,
	renewal    BIGINT          NOT NULL DEFAULT 0,
	data       VARCHAR(1024)   NOT NULL DEFAULT '',
	PRIMARY KEY (name, slot)) ENGINE=InnoDB`,
	"sqlite": `CREATE TABLE %s (
	name       TEXT    NOT NULL,
	slot       INTEGER NOT NULL DEFAULT 0,
	kind       TEXT    NOT NULL DEFAULT 'mutex',
	owner      TEXT    NOT NULL DEFAULT '',
	token      INTEGER NOT NULL DEFAULT 0,
	expires_at INTEGER NOT NULL,
	renewal    INTEGER NOT NULL DEFAULT 0,
	data       TEXT    NOT NULL DEFAULT '',
	PRIMARY KEY (name, slot)) WITHOUT ROWID`,
}

// anHourAhead is the database clock an hour ahead, as expires_at holds it.
var anHourAhead = map[string]string{
	"postgres": `clock_timestamp() + interval '1 hour'`,
	"mysql":    `UTC_TIMESTAMP(6) + INTERVAL 1 HOUR`,
	"sqlite":   `CAST((julianday('now') - 2440587.5) * 86400000000.0 AS INTEGER) + 3600000000`,
}

// dropTables drops the schema of prefix at the end of t.
func dropTables(t *testing.T, db *sql.DB, backend, prefix string) {
	t.Cleanup(func() {
		_, _ = db.Exec("DROP TABLE IF EXISTS " + prefix + "locks")
		_, _ = db.Exec("DROP TABLE IF EXISTS " + prefix + "tokens")
		if backend != "sqlite" {
			_, _ = db.Exec("DROP SEQUENCE IF EXISTS " + prefix + "token_seq")
		}
	})
}

// TestMigrateAddsHolder: on a locks table an older version created (no
// holder column), holding a lock of that version's, Inspect reads the
// holder without a record; a NoMigrate client refuses to lock and says to
// run Migrate; a client's first use adds the column (a second Migrate
// finds it), and its grant then records this process while the older
// grant still shows none.
func TestMigrateAddsHolder(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			db, _ := b.open(t, false)
			prefix := "baton_oldholder_" + batonengine.NewOwnerID()[:8] + "_"
			dropTables(t, db, b.name, prefix)
			ctx := opCtx(t, 30*time.Second)
			old := uniqueName("old")
			for _, stmt := range []string{
				strings.Replace(oldLocksTable[b.name], "%s", prefix+"locks", 1),
				`INSERT INTO ` + prefix + `locks (name, slot, kind, owner, token, expires_at) VALUES ('` + old + `', 0, 'mutex', 'older-baton', 7, ` + anHourAhead[b.name] + `)`,
			} {
				if _, err := db.ExecContext(ctx, stmt); err != nil {
					t.Fatalf("the older version's schema: %v", err)
				}
			}
			fresh := newClient(t, db, sqllock.Options{TablePrefix: prefix})
			rows, err := sqllock.Of(fresh).Inspect(ctx, old)
			if err != nil || len(rows) != 1 || rows[0].Owner != "older-baton" || rows[0].Process.Host != "" {
				t.Fatalf("Inspect on the old table = %+v, %v; want the older grant without a holder record", rows, err)
			}

			strict := newClient(t, db, sqllock.Options{TablePrefix: prefix, NoMigrate: true})
			m, err := strict.Mutex(uniqueName("strict"))
			if err != nil {
				t.Fatal(err)
			}
			if l, err := m.TryLock(ctx); err == nil || !strings.Contains(err.Error(), "Migrate") {
				if l != nil {
					_ = l.Release(ctx)
				}
				t.Errorf("NoMigrate TryLock on the old table = %v, want an error saying to run Migrate", err)
			}

			name := uniqueName("new")
			l := lock(t, fresh, name) // the first use migrates
			defer func() { _ = l.Release(ctx) }()
			if err := sqllock.Migrate(ctx, db, sqllock.Options{TablePrefix: prefix}); err != nil {
				t.Errorf("Migrate() again = %v", err)
			}
			host, _ := os.Hostname()
			rows, err = sqllock.Of(fresh).Inspect(ctx, name)
			if err != nil || len(rows) != 1 || rows[0].Process.Host != host || rows[0].Process.PID != os.Getpid() {
				t.Errorf("Inspect after the migration = %+v, %v; want the holder %s pid %d", rows, err, host, os.Getpid())
			}
			if rows, err := sqllock.Of(fresh).Inspect(ctx, old); err != nil || len(rows) != 1 || rows[0].Process.Host != "" {
				t.Errorf("Inspect of the older grant after the migration = %+v, %v; want no holder record", rows, err)
			}
		})
	}
}

// TestMigrateThenFirstUse: a client whose schema came from its own
// Migrate still prepares itself at its first use: it identifies its
// server and table, which the wake-ups (and PostgreSQL's LISTEN) need.
func TestMigrateThenFirstUse(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			db, _ := b.open(t, false)
			c := newClient(t, db, sqllock.Options{})
			if err := sqllock.Of(c).Migrate(opCtx(t, 10*time.Second)); err != nil {
				t.Fatalf("Migrate() = %v", err)
			}
			if err := lock(t, c, uniqueName("migrated")).Release(opCtx(t, 5*time.Second)); err != nil {
				t.Fatalf("Release() = %v", err)
			}
			if !sqllock.Identified(sqllock.Of(c)) {
				t.Errorf("after Migrate and a lock the client has not identified its table: no wake-ups between its waiters")
			}
		})
	}
}
