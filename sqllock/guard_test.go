package sqllock_test

import (
	"context"
	"testing"
	"time"

	"github.com/baton-go/baton/batontest/testenv"
	"github.com/baton-go/baton/sqllock"
)

// TestBusyGuardKeepsWaiter: a semaphore waiter whose attempts find the
// name's guard row locked by another transaction for several TTLs is
// contended, not cut off: it keeps waiting and is granted once the guard
// is free. Waiting on the guard until the attempt timeout cancelled the
// statement (closing its connection), and after TTL − DriftMargin the
// waiter failed with ErrSessionLost although the server answered.
func TestBusyGuardKeepsWaiter(t *testing.T) {
	// Attempts are bounded by TTL/3 and wait for the guard TTL/6. On a
	// loaded CI host an attempt cut by the client's deadline closes its
	// connection, and the next one must open a connection before its
	// wait: at 900ms and at 1.5s every attempt was then cut, and the
	// waiter was lost after 801ms and 1.351s. 3s leaves 500ms for it.
	const ttl = 3 * time.Second
	db := openDB(t, "pgx", testenv.Postgres(t))
	c := newClient(t, db, sqllock.Options{TTL: ttl, NoListen: true})
	name := uniqueName("busyguard")
	s, err := c.Semaphore(name, 1)
	if err != nil {
		t.Fatalf("Semaphore = %v", err)
	}
	l, err := s.TryAcquire(opCtx(t, 5*time.Second)) // creates the guard row
	if err != nil {
		t.Fatalf("TryAcquire = %v", err)
	}
	if err := l.Release(opCtx(t, 5*time.Second)); err != nil {
		t.Fatalf("Release = %v", err)
	}

	blocker := openDB(t, "pgx", testenv.Postgres(t))
	tx, err := blocker.BeginTx(opCtx(t, 10*time.Second), nil)
	if err != nil {
		t.Fatalf("BeginTx = %v", err)
	}
	defer tx.Rollback() //nolint:errcheck // committed below on success
	var one int
	if err := tx.QueryRowContext(opCtx(t, 5*time.Second), "SELECT 1 FROM "+sqllock.Of(c).Table()+" WHERE name = $1 AND slot = -1 FOR UPDATE", name).Scan(&one); err != nil {
		t.Fatalf("lock the guard row: %v", err)
	}
	got := make(chan error, 1)
	go func() { // owned by this test: its context ends within 20s
		l, err := s.Acquire(opCtx(t, 20*time.Second))
		if err == nil {
			err = l.Release(context.Background())
		}
		got <- err
	}()
	held := 3 * ttl
	select {
	case err := <-got:
		t.Fatalf("Acquire returned %v while the guard was locked, want it to wait", err)
	case <-time.After(held):
	}
	if err := tx.Commit(); err != nil {
		t.Fatalf("Commit = %v", err)
	}
	select {
	case err := <-got:
		if err != nil {
			t.Errorf("Acquire after the guard was held %v = %v, want a grant", held, err)
		}
	case <-time.After(5 * time.Second):
		t.Errorf("Acquire not granted within 5s of the guard's release")
	}
}
