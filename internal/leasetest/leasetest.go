// Package leasetest holds test helpers about what a lease holder sees and
// does, shared by the engines' tests: waiting for a lease's state, and a
// fenced SQLite table to write through under a lease's token.
package leasetest

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/fence"
)

// AwaitState waits until l is in state want, or stops the test once
// within has passed. It wakes on each state change, never polls.
func AwaitState(t testing.TB, l *baton.Lease, want baton.State, within time.Duration) {
	t.Helper()
	deadline := time.After(within)
	for {
		st, changed := l.Observe()
		if st == want {
			return
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("lease of %q: State() = %v, want %v", l.Name(), st, want)
		}
	}
}

// FencedTable returns a fence table, reporting to o, in a fresh SQLite
// file of the test, and the database it lives in.
func FencedTable(t testing.TB, o baton.Observer) (fence.Table, *sql.DB) {
	t.Helper()
	dsn := "file:" + filepath.Join(t.TempDir(), "fence.db") + "?_pragma=busy_timeout(5000)&_txlock=immediate"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		t.Fatalf("sql.Open(sqlite) = %v", err)
	}
	t.Cleanup(func() { _ = db.Close() })
	tbl := fence.Table{Dialect: fence.SQLite, Observer: o}
	if err := tbl.Migrate(t.Context(), db); err != nil {
		t.Fatalf("Migrate = %v", err)
	}
	return tbl, db
}

// WaitsThenTakes checks a waiter queued behind held: the Lock whose lease
// (nil on its error) arrives on got must not return for quiet while held is
// held, and must return a lease with a larger token within 10 s once
// release(held) has run. The waiter's lease is released with release too.
func WaitsThenTakes(t testing.TB, got <-chan *baton.Lease, held *baton.Lease, quiet time.Duration, release func(*baton.Lease)) {
	t.Helper()
	select {
	case l := <-got:
		if l != nil {
			t.Fatalf("the waiter took the lock while %s holds it (tokens %d, %d)", held.Owner(), held.Token(), l.Token())
		}
		return
	case <-time.After(quiet):
	}
	release(held)
	select {
	case l := <-got:
		if l == nil {
			return
		}
		release(l)
		if l.Token() <= held.Token() {
			t.Errorf("the waiter's token %d after the holder's %d, want greater", l.Token(), held.Token())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the waiter was not granted within 10s of the release")
	}
}

// NextTokenAbove takes m with TryLock, which must be granted (its last
// holder released it), and checks that the grant's token is above last,
// the token a fenced resource last stored; the lease is released when the
// test ends.
func NextTokenAbove(t testing.TB, m baton.Locker, last uint64) {
	t.Helper()
	l, err := m.TryLock(t.Context())
	if err != nil {
		t.Fatalf("TryLock after the released lock = %v, want a grant", err)
	}
	t.Cleanup(func() { _ = l.Release(context.Background()) })
	if l.Token() <= last {
		t.Errorf("next grant's token %d, want above the fence's %d", l.Token(), last)
	}
}
