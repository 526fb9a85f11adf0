package sqllock_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/batontest/testenv"
	"github.com/baton-go/baton/sqllock"
	"github.com/go-sql-driver/mysql"
)

// mysqlBackend returns the MySQL backend, skipping (by hand) when it is
// not configured.
func mysqlBackend(t *testing.T) backend {
	t.Helper()
	for _, b := range backends(t) {
		if b.name == "mysql" {
			return b
		}
	}
	t.Fatal("no mysql backend")
	return backend{}
}

// TestMySQLLoneReleaseLocksOneRow: releasing one lease touches its own row
// only. MariaDB planned the one-element row IN list this statement was
// written with as a scan of the whole primary key, locking every row it
// read, so a release waited for any other transaction holding any row of
// the table (and every acquire and renewal waited for it). Here another
// transaction holds another name's row: the release must not wait for it.
func TestMySQLLoneReleaseLocksOneRow(t *testing.T) {
	b := mysqlBackend(t)
	db, _ := b.open(t, false)
	c := newClient(t, db, sqllock.Options{})
	// The other name sorts before and after ours: a scan from either end
	// meets it.
	before, ours, after := uniqueName("a-lone"), uniqueName("m-lone"), uniqueName("z-lone")
	for _, n := range []string{before, after} {
		if err := lock(t, c, n).Release(opCtx(t, 5*time.Second)); err != nil {
			t.Fatalf("Release(%s) = %v", n, err)
		}
	}
	l := lock(t, c, ours)

	tx, err := db.BeginTx(opCtx(t, 10*time.Second), nil)
	if err != nil {
		t.Fatalf("BeginTx = %v", err)
	}
	defer tx.Rollback() //nolint:errcheck // only a lock holder
	for _, n := range []string{before, after} {
		var owner string
		if err := tx.QueryRowContext(opCtx(t, 5*time.Second), `SELECT owner FROM baton_locks WHERE name = ? AND slot = 0 FOR UPDATE`, n).Scan(&owner); err != nil {
			t.Fatalf("lock the row of %s: %v", n, err)
		}
	}
	start := time.Now()
	if err := l.Release(opCtx(t, 3*time.Second)); err != nil {
		t.Fatalf("Release(%s) while another transaction holds other rows = %v after %v, want it not to wait", ours, err, time.Since(start))
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("Release(%s) took %v while another transaction held other rows, want no lock wait", ours, d)
	}
}

// TestMySQLStaleTokenRefused: MySQL's acquire takes its token before it
// takes the row, in another statement, so a free row whose token is above
// the one taken (a grant and release made in between by another client)
// must refuse it: tokens never go down within a name. The row is given a
// token far above the shared counter; attempts are refused until the
// counter passes it.
func TestMySQLStaleTokenRefused(t *testing.T) {
	b := mysqlBackend(t)
	db, _ := b.open(t, false)
	const prefix = "baton_staletok_" // a counter of its own
	c := newClient(t, db, sqllock.Options{TablePrefix: prefix})
	name := uniqueName("staletok")
	l := lock(t, c, name)
	tok := l.Token()
	if err := l.Release(opCtx(t, 5*time.Second)); err != nil {
		t.Fatalf("Release = %v", err)
	}
	high := tok + 3
	if _, err := db.ExecContext(opCtx(t, 5*time.Second), `UPDATE `+prefix+`locks SET token = ? WHERE name = ? AND slot = 0`, high, name); err != nil {
		t.Fatalf("raise the row's token: %v", err)
	}
	m, err := c.Mutex(name)
	if err != nil {
		t.Fatalf("Mutex = %v", err)
	}
	for i := range 3 { // the counter takes tok+1, tok+2, tok+3: none above high
		if l, err := m.TryLock(opCtx(t, 5*time.Second)); !errors.Is(err, baton.ErrNotAcquired) {
			t.Fatalf("TryLock %d on a free row with token %d, counter at %d = %v, %v, want %v", i, high, tok+uint64(i)+1, l, err, baton.ErrNotAcquired)
		}
	}
	l, err = m.TryLock(opCtx(t, 5*time.Second))
	if err != nil {
		t.Fatalf("TryLock once the counter passed the row's token = %v", err)
	}
	defer l.Release(opCtx(t, 5*time.Second)) //nolint:errcheck // cleanup
	if l.Token() <= high {
		t.Errorf("token %d over a row that held %d, want greater", l.Token(), high)
	}
}

// TestMySQLDSNOptions: the acquire tells a grant from a refusal by the
// statement's LAST_INSERT_ID, not by rows affected, so it holds with
// clientFoundRows (a refused upsert then reports a row "affected") and
// with server-side prepared statements as with interpolated ones.
func TestMySQLDSNOptions(t *testing.T) {
	for _, foundRows := range []bool{false, true} {
		for _, interpolate := range []bool{false, true} {
			t.Run(fmt.Sprintf("clientFoundRows=%v,interpolateParams=%v", foundRows, interpolate), func(t *testing.T) {
				cfg, err := mysql.ParseDSN(testenv.MySQL(t))
				if err != nil {
					t.Fatalf("mysql.ParseDSN(BATON_TEST_MYSQL) = %v", err)
				}
				cfg.ClientFoundRows, cfg.InterpolateParams = foundRows, interpolate
				c := newClient(t, openDB(t, "mysql", cfg.FormatDSN()), sqllock.Options{})
				name := uniqueName("dsn")
				l := lock(t, c, name)
				m, err := c.Mutex(name)
				if err != nil {
					t.Fatalf("Mutex = %v", err)
				}
				if l2, err := m.TryLock(opCtx(t, 5*time.Second)); !errors.Is(err, baton.ErrNotAcquired) {
					t.Fatalf("TryLock while held = %v, %v, want %v", l2, err, baton.ErrNotAcquired)
				}
				tok := l.Token()
				if err := l.Release(opCtx(t, 5*time.Second)); err != nil {
					t.Fatalf("Release = %v", err)
				}
				l = lock(t, c, name)
				defer l.Release(opCtx(t, 5*time.Second)) //nolint:errcheck // cleanup
				if l.Token() <= tok {
					t.Errorf("token %d after %d, want greater", l.Token(), tok)
				}
			})
		}
	}
}

// TestMariaDBRefusalDrawsNoToken: on MariaDB a lock object's attempt on
// a name whose row it has seen is one UPDATE, which draws the sequence's
// next value only for a free row; the upsert draws one on every attempt.
// Of three refusals between two grants only the first, the lock object's
// first attempt and so an upsert, draws one. A row deleted under a lock
// object that has seen it is added back by the upsert after the UPDATE
// finds nothing, with a larger token.
func TestMariaDBRefusalDrawsNoToken(t *testing.T) {
	b := mysqlBackend(t)
	db, _ := b.open(t, false)
	const prefix = "baton_drawless_" // a sequence of its own
	a := newClient(t, db, sqllock.Options{TablePrefix: prefix})
	other := newClient(t, db, sqllock.Options{TablePrefix: prefix})
	name := uniqueName("drawless")
	release := func(l *baton.Lease) {
		t.Helper()
		if err := l.Release(opCtx(t, 5*time.Second)); err != nil {
			t.Fatalf("Release = %v", err)
		}
	}
	release(lock(t, a, name)) // the name's row exists from here on
	l := lock(t, a, name)
	first := l.Token()
	m, err := other.Mutex(name)
	if err != nil {
		t.Fatalf("Mutex = %v", err)
	}
	for i := range 3 {
		if _, err := m.TryLock(opCtx(t, 5*time.Second)); !errors.Is(err, baton.ErrNotAcquired) {
			t.Fatalf("TryLock %d on a held lock = %v, want %v", i, err, baton.ErrNotAcquired)
		}
	}
	release(l)
	if !sqllock.UsesSequence(a) {
		testenv.Unavailable(t, "the counter, not the sequence: MySQL draws a token per attempt; the test needs MariaDB")
	}
	l = lock(t, a, name)
	if l.Token() != first+2 {
		t.Errorf("token after three refusals = %d, want %d (%d, then one for the first refusal's upsert)", l.Token(), first+2, first)
	}
	release(l)

	before := l.Token()
	if _, err := db.ExecContext(opCtx(t, 5*time.Second), "DELETE FROM "+sqllock.Of(a).Table()+" WHERE name = ?", name); err != nil {
		t.Fatalf("deleting the row = %v", err)
	}
	l, err = m.TryLock(opCtx(t, 5*time.Second))
	if err != nil {
		t.Fatalf("TryLock on a name whose row was deleted = %v", err)
	}
	if l.Token() <= before {
		t.Errorf("token after the row was deleted = %d, want > %d", l.Token(), before)
	}
	release(l)
}
