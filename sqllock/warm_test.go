package sqllock_test

import (
	"net/url"
	"testing"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/batontest/testenv"
	batonengine "github.com/baton-go/baton/engine"
	"github.com/baton-go/baton/sqllock"
)

// TestWarmConnKilled: the server closing the connections a client keeps
// warm for renewals and releases (pg_terminate_backend, as a restart or an
// idle timeout would) costs a Release nothing: it runs again on the pool,
// which checks a connection before it lends it. On the pinned connection
// alone it failed with "FATAL: terminating connection due to
// administrator command" (drill row 12).
func TestWarmConnKilled(t *testing.T) {
	c, kill := killableClient(t, sqllock.Options{TTL: 10 * time.Second})
	l := lock(t, c, uniqueName("warm"))
	if n := kill(); n < 2 {
		t.Fatalf("pg_terminate_backend of the client's connections = %d, want the two warm ones at least", n)
	}
	time.Sleep(1100 * time.Millisecond) // pgx pings a pooled connection idle for over 1s before lending it
	if err := l.Release(opCtx(t, 5*time.Second)); err != nil {
		t.Errorf("Release after the server closed the client's connections = %v, want nil", err)
	}
}

// killableClient opens a Client on BATON_TEST_POSTGRES whose connections
// carry an application_name of their own, and a function that closes
// them all on the server (pg_terminate_backend, as a restart would) and
// returns how many it closed.
func killableClient(t *testing.T, o sqllock.Options) (*baton.Client, func() int) {
	t.Helper()
	u, err := url.Parse(testenv.Postgres(t))
	if err != nil {
		t.Fatalf("url.Parse(BATON_TEST_POSTGRES) = %v", err)
	}
	admin := openDB(t, "pgx", u.String())
	app := "baton-kill-" + batonengine.NewOwnerID()[:12]
	q := u.Query()
	q.Set("application_name", app)
	u.RawQuery = q.Encode()
	c := newClient(t, openDB(t, "pgx", u.String()), o)
	return c, func() int {
		t.Helper()
		var n int
		err := admin.QueryRowContext(opCtx(t, 5*time.Second),
			`SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1) k`, app).Scan(&n)
		if err != nil {
			t.Fatalf("pg_terminate_backend of the client's connections: %v", err)
		}
		return n
	}
}
