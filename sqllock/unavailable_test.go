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

// TestLockNeverReached: a blocking Lock whose every attempt fails before
// reaching the database (its *sql.DB closed), and whose ctx ends in the
// backoff sleep between them, returns an error wrapping both the ctx
// error and baton.ErrUnavailable: the lock was not taken, the database
// was unreachable. (A client that never reached the database fails at
// once, with ErrUnavailable, in its schema check.)
func TestLockNeverReached(t *testing.T) {
	db := openDB(t, "sqlite", "file:"+filepath.Join(t.TempDir(), "locks.db")+sqliteDSN)
	c := newClient(t, db, sqllock.Options{})
	l := lock(t, c, "never") // the schema is known from now on
	if err := l.Release(context.Background()); err != nil {
		t.Fatalf("Release = %v", err)
	}
	_ = db.Close()
	m, err := c.Mutex("never")
	if err != nil {
		t.Fatalf("Mutex = %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	start := time.Now()
	l, err = m.Lock(ctx)
	if err == nil {
		t.Fatalf("Lock on a closed *sql.DB = %v, want an error", l)
	}
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, baton.ErrUnavailable) {
		t.Errorf("Lock on a closed *sql.DB = %v, want an error wrapping %v and %v", err, context.DeadlineExceeded, baton.ErrUnavailable)
	}
	if d := time.Since(start); d < 400*time.Millisecond {
		t.Errorf("Lock returned after %v, want it to retry until its ctx ends (500ms)", d)
	}
}
