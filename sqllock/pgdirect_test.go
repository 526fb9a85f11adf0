package sqllock_test

import (
	"testing"
	"time"

	"github.com/baton-go/baton/sqllock"
)

// TestAttemptAfterConnsKilled: PostgreSQL attempts run on pgx's own
// connection, outside database/sql's query path (pgdirect.go). When the
// server closes every pooled connection (pg_terminate_backend, as a
// restart would) less than a second after their last use, so that pgx
// lends them again without a ping, a waiting Lock is still granted
// promptly and nothing is left broken in the pool: a failed attempt's
// connection is discarded, and the next attempt opens a new one.
func TestAttemptAfterConnsKilled(t *testing.T) {
	c, kill := killableClient(t, sqllock.Options{TTL: 10 * time.Second})
	name := uniqueName("direct")
	for range 3 {
		if err := lock(t, c, name).Release(opCtx(t, 5*time.Second)); err != nil {
			t.Fatalf("Release = %v", err)
		}
	}
	n := kill()
	if n < 1 {
		t.Fatalf("pg_terminate_backend of the client's connections = %d, want one at least", n)
	}
	m, err := c.Mutex(name)
	if err != nil {
		t.Fatalf("Mutex = %v", err)
	}
	start := time.Now()
	l, err := m.Lock(opCtx(t, 5*time.Second))
	if err != nil {
		t.Fatalf("Lock after the server closed %d pooled connections = %v, want a lease", n, err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("Lock after the server closed %d pooled connections took %v, want < 2s", n, took)
	}
	if err := l.Release(opCtx(t, 5*time.Second)); err != nil {
		t.Errorf("Release = %v", err)
	}
	for i := range 5 {
		l, err := m.TryLock(opCtx(t, 5*time.Second))
		if err != nil {
			t.Fatalf("TryLock %d after the pool recovered = %v", i, err)
		}
		if err := l.Release(opCtx(t, 5*time.Second)); err != nil {
			t.Fatalf("Release %d = %v", i, err)
		}
	}
	t.Logf("%d connections closed by the server; Lock granted in %v", n, time.Since(start).Round(time.Millisecond))
}
