package sqllock_test

import (
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/baton-go/baton"
	batonengine "github.com/baton-go/baton/engine"
	"github.com/baton-go/baton/sqllock"
)

// TestMigrateRetiresCounter: on MariaDB, tables whose tokens came from the
// counter move to the sequence at this version's first migration. The
// sequence's tokens, for every recipe, are above every token the counter
// gave; the counter is retired; a client still on the counter (as an
// earlier version is) then fails its acquires instead of granting a token
// that goes back; and a second migration changes nothing.
func TestMigrateRetiresCounter(t *testing.T) {
	b := mysqlBackend(t)
	db, _ := b.open(t, false)
	prefix := migrationPrefix(t, db, "retire")
	old := newClient(t, db, sqllock.Options{TablePrefix: prefix})
	sqllock.CounterOnly(sqllock.Of(old))
	name := uniqueName("retire")
	var last uint64
	for range 3 {
		l := lock(t, old, name)
		last = l.Token()
		if err := l.Release(opCtx(t, 5*time.Second)); err != nil {
			t.Fatalf("Release = %v", err)
		}
	}

	newer := newClient(t, db, sqllock.Options{TablePrefix: prefix})
	l := lock(t, newer, name)
	if l.Token() <= last {
		t.Errorf("token from the sequence = %d, want above the counter's last token %d", l.Token(), last)
	}
	last = l.Token()
	if err := l.Release(opCtx(t, 5*time.Second)); err != nil {
		t.Fatalf("Release = %v", err)
	}
	var v string
	if err := db.QueryRow("SELECT v FROM " + prefix + "tokens WHERE id = 1").Scan(&v); err != nil || v != "18446744073709551615" {
		t.Errorf("counter after the migration = %q, %v, want it retired at 18446744073709551615", v, err)
	}

	m, _ := old.Mutex(uniqueName("retire-old"))
	if l, err := m.TryLock(opCtx(t, 5*time.Second)); err == nil {
		t.Errorf("TryLock on the retired counter = a lease with token %d, want an error", l.Token())
		_ = l.Release(opCtx(t, 5*time.Second))
	} else if !strings.Contains(err.Error(), "out of range") {
		t.Errorf("TryLock on the retired counter = %v, want the counter's out-of-range error", err)
	}

	if err := sqllock.Migrate(opCtx(t, 10*time.Second), db, sqllock.Options{TablePrefix: prefix}); err != nil {
		t.Fatalf("second Migrate = %v", err)
	}
	wrote := writeLockAbove(t, newer, name, last, "after a second Migrate")

	// A client migrated by its own Migrate takes the sequence too (it
	// went on to the retired counter, and failed, before Migrate looked
	// the token source up).
	third := newClient(t, db, sqllock.Options{TablePrefix: prefix})
	if err := sqllock.Of(third).Migrate(opCtx(t, 10*time.Second)); err != nil {
		t.Fatalf("Client.Migrate = %v", err)
	}
	l = lock(t, third, name)
	if l.Token() <= wrote {
		t.Errorf("token after Client.Migrate = %d, want above %d", l.Token(), wrote)
	}
	_ = l.Release(opCtx(t, 5*time.Second))
}

// TestNoMigrateClientMovesToSequence: a NoMigrate client that looked the
// token source up before the sequence existed is on the counter; when a
// migration then moves the table to the sequence and retires the counter,
// its next acquires (a mutex's one statement and a recipe's transaction)
// move to the sequence instead of failing on the retired counter, and
// their tokens go up.
func TestNoMigrateClientMovesToSequence(t *testing.T) {
	b := mysqlBackend(t)
	db, _ := b.open(t, false)
	prefix := migrationPrefix(t, db, "late")
	old := newClient(t, db, sqllock.Options{TablePrefix: prefix})
	sqllock.CounterOnly(sqllock.Of(old)) // an earlier version: tables, no sequence
	if err := sqllock.Of(old).Migrate(opCtx(t, 10*time.Second)); err != nil {
		t.Fatalf("Migrate of the earlier version = %v", err)
	}
	late := newClient(t, db, sqllock.Options{TablePrefix: prefix, NoMigrate: true})
	name := uniqueName("late")
	l := lock(t, late, name)
	last := l.Token()
	if err := l.Release(opCtx(t, 5*time.Second)); err != nil {
		t.Fatalf("Release = %v", err)
	}

	if err := sqllock.Migrate(opCtx(t, 10*time.Second), db, sqllock.Options{TablePrefix: prefix}); err != nil {
		t.Fatalf("Migrate = %v", err)
	}
	l = lock(t, late, name)
	if l.Token() <= last {
		t.Errorf("token after the migration = %d, want above %d", l.Token(), last)
	}
	last = l.Token()
	if err := l.Release(opCtx(t, 5*time.Second)); err != nil {
		t.Fatalf("Release = %v", err)
	}
	writeLockAbove(t, late, uniqueName("late-rw"), last, "after the migration")
}

// writeLockAbove takes and releases the write lock of name on c, and
// checks that its token is above last; it returns the token.
func writeLockAbove(t *testing.T, c *baton.Client, name string, last uint64, when string) uint64 {
	t.Helper()
	rw, err := c.RWMutex(name)
	if err != nil {
		t.Fatalf("RWMutex = %v", err)
	}
	wl, err := rw.Lock(opCtx(t, 10*time.Second))
	if err != nil {
		t.Fatalf("RWMutex.Lock %s = %v", when, err)
	}
	if wl.Token() <= last {
		t.Errorf("write lock's token %s = %d, want above %d", when, wl.Token(), last)
	}
	_ = wl.Release(opCtx(t, 5*time.Second))
	return wl.Token()
}

// migrationPrefix is a table prefix of the test's own, whose tables and
// sequence are dropped at its end.
func migrationPrefix(t *testing.T, db *sql.DB, tag string) string {
	prefix := "baton_" + tag + "_" + batonengine.NewOwnerID()[:8] + "_"
	t.Cleanup(func() {
		_, _ = db.Exec("DROP TABLE IF EXISTS " + prefix + "locks")
		_, _ = db.Exec("DROP TABLE IF EXISTS " + prefix + "tokens")
		_, _ = db.Exec("DROP SEQUENCE IF EXISTS " + prefix + "token_seq")
	})
	return prefix
}
