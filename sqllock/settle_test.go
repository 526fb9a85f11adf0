package sqllock_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/batontest/heldtest"
	"github.com/baton-go/baton/batontest/testenv"
	"github.com/baton-go/baton/sqllock"
)

// TestCancelledAttemptLandingLate: an acquire cancelled while its
// attempt is on its way to the server returns at once and leaves nothing
// behind when the attempt lands after the cancel. The attempt's
// connection delivers its writes 300ms late; the driver's cancel request
// (on a prompt connection) finds the server idle, and the owner-checked
// release of the abandoned attempt was sent at the cancel: it found
// nothing, and the grant that followed stayed with no holder, blocking
// the lock for a TTL and listed until someone took it over.
func TestCancelledAttemptLandingLate(t *testing.T) {
	const ttl = 6 * time.Second // attempts get TTL/3: longer than the delay
	d := &slowDial{delay: 300 * time.Millisecond, sent: make(chan struct{})}
	db := openSlowPG(t, d)
	db.SetMaxIdleConns(1) // the attempt reuses the warm connection
	c := newClient(t, db, sqllock.Options{TTL: ttl, NoListen: true})
	other := newClient(t, openDB(t, "pgx", testenv.Postgres(t)), sqllock.Options{TTL: ttl, NoListen: true})
	name := uniqueName("late")
	for range 2 { // schema, pinned connection, prepared statements
		if err := lock(t, c, name).Release(opCtx(t, 5*time.Second)); err != nil {
			t.Fatalf("Release() = %v", err)
		}
	}
	m, err := c.Mutex(name)
	if err != nil {
		t.Fatalf("Mutex() = %v", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	type result struct {
		l   *baton.Lease
		err error
	}
	done := make(chan result, 1)
	d.armed.Store(true)
	go func() { // owned by the test, which reads done below
		l, err := m.Lock(ctx)
		done <- result{l, err}
	}()
	select {
	case <-d.sent:
	case <-time.After(5 * time.Second):
		t.Fatal("no attempt sent within 5s")
	}
	cancel()
	cancelled := time.Now()
	r := <-done
	if took := time.Since(cancelled); took > 150*time.Millisecond {
		t.Errorf("Lock returned %v after the cancel, want at once", took)
	}
	if r.l != nil || !errors.Is(r.err, context.Canceled) {
		t.Fatalf("cancelled Lock = %v, %v; want an error wrapping %v", r.l, r.err, context.Canceled)
	}

	// The attempt lands about now: its grant must be freed long before
	// its TTL.
	time.Sleep(2 * d.delay)
	tryLockWithin(t, other, name, 2*time.Second, "the cancelled attempt landed: its grant was left behind")
	if es, err := sqllock.Of(other).Entries(opCtx(t, 5*time.Second), name); err != nil || len(es) > 0 {
		t.Errorf("Entries after the release = %q, %v; want none", es, err)
	}
}

// TestReleaseCancelledOnServer: a release that outlives its deadline is
// cancelled on the server by pgx's cancel request, so it did nothing. The
// lease ends Lost as Release returns, and the release goes on in the
// background: another client takes the lock as soon as the row is free,
// not a TTL later. Here the release waits behind a transaction holding
// the row (a slow server in a CI run did the same to the drill of a lost
// release reply); before, the lease stayed held and renewed after its
// failed release, and nobody got the lock until its process ended.
func TestReleaseCancelledOnServer(t *testing.T) {
	const ttl = 6 * time.Second
	c := newClient(t, openDB(t, "pgx", testenv.Postgres(t)), sqllock.Options{TTL: ttl, NoListen: true})
	other := newClient(t, openDB(t, "pgx", testenv.Postgres(t)), sqllock.Options{TTL: ttl, NoListen: true})
	name := uniqueName("relcancel")
	l := lock(t, c, name)
	tx, err := openDB(t, "pgx", testenv.Postgres(t)).BeginTx(opCtx(t, 5*time.Second), nil)
	if err != nil {
		t.Fatalf("BeginTx() = %v", err)
	}
	defer func() { _ = tx.Rollback() }()
	var n int
	if err := tx.QueryRow(`SELECT count(*) FROM (SELECT 1 FROM baton_locks WHERE name = $1 FOR UPDATE) AS held`, name).Scan(&n); err != nil || n != 1 {
		t.Fatalf("locking the lease's row = %d rows, %v; want 1", n, err)
	}
	if err := l.Release(opCtx(t, 300*time.Millisecond)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Release() behind a held row = %v, want the deadline", err)
	}
	if st := l.State(); st != baton.Lost {
		t.Errorf("State() after the failed release = %v, want %v", st, baton.Lost)
	}
	time.Sleep(200 * time.Millisecond) // the background release waits on the row too
	if err := tx.Rollback(); err != nil {
		t.Fatalf("Rollback() = %v", err)
	}
	tryLockWithin(t, other, name, 2*time.Second, "the row was freed: the failed release was not carried on")
}

// tryLockWithin polls TryLock of name on c until it is granted, then
// releases it; it fails the test when within has passed, saying after
// what.
func tryLockWithin(t *testing.T, c *baton.Client, name string, within time.Duration, after string) {
	t.Helper()
	m, err := c.Mutex(name)
	if err != nil {
		t.Fatalf("Mutex() = %v", err)
	}
	var l *baton.Lease
	for deadline := time.Now().Add(within); l == nil; time.Sleep(20 * time.Millisecond) {
		l, err = m.TryLock(opCtx(t, 5*time.Second))
		if l == nil && time.Now().After(deadline) {
			es, _ := sqllock.Of(c).Entries(opCtx(t, 5*time.Second), name)
			t.Fatalf("TryLock %v after %s = %v (entries %q)", within, after, err, es)
		}
	}
	if err := l.Release(opCtx(t, 5*time.Second)); err != nil {
		t.Fatalf("Release() = %v", err)
	}
}

// TestEndlessAttemptInPlace: an acquire whose context never ends sends
// its attempt's statement from its own goroutine. Its attempts end only
// at the attempt timeout or at Close, which bound the statement anyway,
// so the goroutine settle starts for a cancellable acquire (and its two
// hand-offs, 14% of an uncontended lock+unlock) buys nothing there.
func TestEndlessAttemptInPlace(t *testing.T) {
	cfg, err := pgx.ParseConfig(testenv.Postgres(t))
	if err != nil {
		t.Fatalf("pgx.ParseConfig() = %v", err)
	}
	var inPlace atomic.Int64
	var dialer net.Dialer
	cfg.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dialer.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &stackConn{Conn: c, hits: &inPlace}, nil
	}
	db := stdlib.OpenDB(*cfg)
	t.Cleanup(func() { _ = db.Close() })
	c := newClient(t, db, sqllock.Options{TTL: 6 * time.Second, NoListen: true})
	m, err := c.Mutex(uniqueName("in-place"))
	if err != nil {
		t.Fatal(err)
	}
	for range 2 { // the first also prepares and pins connections
		before := inPlace.Load()
		l := lockInPlace(t, m)
		if n := inPlace.Load() - before; n == 0 {
			t.Errorf("Lock(context.Background()) sent nothing from its own goroutine")
		}
		if err := l.Release(opCtx(t, 5*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
}

// lockInPlace locks m with a context that never ends; stackConn looks for
// it on the stack of each write.
func lockInPlace(t *testing.T, m *baton.Mutex) *baton.Lease {
	l, err := m.Lock(context.Background())
	if err != nil {
		t.Fatalf("Lock() = %v", err)
	}
	return l
}

// stackConn counts the writes made with lockInPlace on their goroutine's
// stack.
type stackConn struct {
	net.Conn
	hits *atomic.Int64
}

func (c *stackConn) Write(p []byte) (int, error) {
	buf := make([]byte, 64<<10)
	if bytes.Contains(buf[:runtime.Stack(buf, false)], []byte("sqllock_test.lockInPlace")) {
		c.hits.Add(1)
	}
	return c.Conn.Write(p)
}

// TestLockLoopStartsNoGoroutine: under a context that can end, a mutex
// attempt's statement runs on a goroutine of its own (settle), one per
// lock+unlock on PostgreSQL and MySQL, each started on a small stack that
// the driver's call path grew by copying. The Client's workers keep
// theirs between attempts (gopool): a loop starts almost none. SQLite runs
// its statements in place; its driver starts goroutines of its own for a
// context that can end.
func TestLockLoopStartsNoGoroutine(t *testing.T) {
	for _, b := range backends(t) {
		if b.name == "sqlite" {
			continue
		}
		t.Run(b.name, func(t *testing.T) {
			db, _ := b.open(t, false)
			m, err := newClient(t, db, sqllock.Options{NoListen: true}).Mutex(uniqueName("loop"))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			heldtest.CheckLockLoop(t, ctx, m)
		})
	}
}
