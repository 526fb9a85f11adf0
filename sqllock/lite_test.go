package sqllock_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/sqllock"
)

// TestSQLiteAttemptBoundOnWriteLock: an SQLite mutex attempt that waits
// for the database file's write lock, held by another connection, ends
// within the attempt bound (TTL/3), long before the busy timeout (5s),
// although its statements after BEGIN run on a context that cannot end,
// and leaves nothing to free (its transaction never began);
// the attempts' connection serves the next lock once the write lock is
// free; and Close ends an acquire blocked on the write lock at once.
func TestSQLiteAttemptBoundOnWriteLock(t *testing.T) {
	file := filepath.Join(t.TempDir(), "locks.db")
	c := newClient(t, openDB(t, "sqlite", "file:"+file+sqliteDSN), sqllock.Options{})
	m, err := c.Mutex("lite/bound")
	if err != nil {
		t.Fatal(err)
	}
	// One lock+unlock pins the attempts' connection and prepares its
	// statements.
	l := lock(t, c, "lite/bound")
	if err := l.Release(opCtx(t, 5*time.Second)); err != nil {
		t.Fatalf("Release = %v", err)
	}

	other := openDB(t, "sqlite", "file:"+file+sqliteDSN)
	conn, err := other.Conn(opCtx(t, 5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(opCtx(t, 5*time.Second), "BEGIN IMMEDIATE"); err != nil {
		t.Fatalf("BEGIN IMMEDIATE on another connection = %v", err)
	}
	bound := testTTL / 3
	start := time.Now()
	_, err = m.TryLock(context.Background())
	took := time.Since(start)
	if err == nil {
		t.Fatal("TryLock with the write lock held elsewhere = a lease, want an error")
	}
	if took > bound+300*time.Millisecond {
		t.Errorf("TryLock blocked on the write lock took %v, want within the attempt bound %v (+300ms)", took, bound)
	}
	t.Logf("TryLock blocked on the write lock: %v after %v (bound %v)", err, took, bound)
	// Its transaction never began: nothing for the keeper to free. A
	// queued release would wait on the same write lock, and Close would
	// spend its release bound on it (the Close check below).
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	granted, forget, err := sqllock.Of(c).TryMutex(ctx, "lite/bound")
	if err == nil || granted || forget != "" {
		t.Errorf("attempt on the write lock = granted %v, forget %q, err %v; want an error and nothing to forget", granted, forget, err)
	}

	if _, err := conn.ExecContext(opCtx(t, 5*time.Second), "ROLLBACK"); err != nil {
		t.Fatalf("ROLLBACK = %v", err)
	}
	l = lock(t, c, "lite/bound") // the connection left no transaction open
	if err := l.Release(opCtx(t, 5*time.Second)); err != nil {
		t.Fatalf("Release = %v", err)
	}

	if _, err := conn.ExecContext(opCtx(t, 5*time.Second), "BEGIN IMMEDIATE"); err != nil {
		t.Fatalf("BEGIN IMMEDIATE again = %v", err)
	}
	done := make(chan error, 1)
	go func() { // owned by the test: ends with Close below
		_, err := m.Lock(context.Background())
		done <- err
	}()
	time.Sleep(bound + bound/2) // a first attempt was cut, a second waits
	start = time.Now()
	if err := c.Close(); err != nil {
		t.Fatalf("Close = %v", err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, baton.ErrClosed) {
			t.Errorf("Lock blocked on the write lock, then Close = %v, want ErrClosed", err)
		}
		if took := time.Since(start); took > bound {
			t.Errorf("Lock returned %v after Close, want within %v", took, bound)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Lock blocked on the write lock did not return within 5s of Close")
	}
	_, _ = conn.ExecContext(context.Background(), "ROLLBACK")
}

// TestCancelBehindFirstUse: a Lock that waits behind another acquire's
// first-use preparation on the same client (the schema's check, the
// server's identity, the token source, the warm connections: several
// round trips) returns as soon as its context is cancelled, with the
// context's error, and the client serves the next Lock once the
// preparation is done. Behind a mutex such a Lock waited the preparation
// out: a drill's cancel-bulk saw one return 281 ms after its cancel.
func TestCancelBehindFirstUse(t *testing.T) {
	c := newClient(t, openDB(t, "sqlite", "file:"+filepath.Join(t.TempDir(), "locks.db")+sqliteDSN), sqllock.Options{})
	m, err := c.Mutex("lite/first-use")
	if err != nil {
		t.Fatal(err)
	}
	release := sqllock.HoldSchema(sqllock.Of(c))
	ctx, cancel := context.WithCancel(t.Context())
	type result struct {
		err error
		at  time.Time
	}
	done := make(chan result, 1)
	go func() { // owner: the test, which reads done
		l, err := m.Lock(ctx)
		if l != nil {
			_ = l.Release(context.Background())
		}
		done <- result{err, time.Now()}
	}()
	time.Sleep(50 * time.Millisecond)
	cancelAt := time.Now()
	cancel()
	var r result
	select {
	case r = <-done:
	case <-time.After(2 * time.Second):
		release()
		r = <-done
		t.Fatalf("Lock behind a first use went on %v after its cancel (returned %v once the gate was free)", time.Since(cancelAt), r.err)
	}
	release()
	if !errors.Is(r.err, context.Canceled) {
		t.Errorf("cancelled Lock behind a first use = %v, want context.Canceled", r.err)
	}
	if took := r.at.Sub(cancelAt); took > 250*time.Millisecond {
		t.Errorf("cancelled Lock behind a first use returned %v after its cancel, want ≤ 250ms", took)
	}
	l := lock(t, c, "lite/first-use") // the preparation runs now
	if err := l.Release(opCtx(t, 5*time.Second)); err != nil {
		t.Errorf("Release = %v", err)
	}
}
