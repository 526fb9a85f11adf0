package drill_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/drill"
	"github.com/baton-go/baton/drill/drilltest"
)

// The rows whose lease-engine form differs from the queue engines': the
// herd (9), the cancel racing a grant (10) and the waiter's own
// connection killed (12).

// herdLeaseRow is row 9 on a lease engine. Its waiters hold no queue
// position: each retries on a jittered backoff (capped at TTL/4) and at
// once when a release in this process wakes it. There is no order to
// check and no single waiter to wake, so the row asserts what a lease
// engine owes instead: each waiter acquires exactly once, tokens
// increase, nothing overlaps at the resource — and no hot loop: the
// server requests per waiter and handoff stay bounded as the herd grows.
func herdLeaseRow(t *testing.T, e *engine) {
	seed := drilltest.BaseSeed()
	var small float64
	large := herdSize()
	for i, n := range []int{5, 5, large} {
		per := herdLease(t, e, seed+uint64(i), n)
		if n == 5 {
			small += per / 2
			continue
		}
		if per < 0 {
			t.Logf("%s: no transport to count attempts on; correctness checked only", e.name)
			return
		}
		t.Logf("%s: %.2f attempts per waiting waiter and handoff at 5 waiters, %.2f at %d", e.name, small, per, large)
		// A waiter retries when woken by a release and when its backoff
		// runs out; a handful of attempts per handoff is that, more is a
		// loop that does not wait.
		if per > herdAttemptBound {
			t.Errorf("%s: %.2f attempts per waiting waiter and handoff at %d waiters, want ≤ %v (a hot loop)", e.name, per, large, herdAttemptBound)
		}
	}
}

// herdAttemptBound bounds a lease engine's acquire attempts per waiting
// waiter per handoff (row 9).
const herdAttemptBound = 3.0

// herdLease runs one round with n waiters (sharing one client, one pool)
// behind a plug holder and returns the acquire attempts per waiting waiter
// and handoff, counted on the wire; -1 on an engine without one.
func herdLease(t *testing.T, e *engine, seed uint64, n int) float64 {
	run := drilltest.Start(t, seed)
	name := lockName("row09", e, seed)
	res := newCounters(t, run)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }() // a failed trial stops its waiters
	plug := newHolder(t, run, e, "plug", name, clientOpts{ttl: herdTTL})
	lp, err := plug.lock(ctx)
	if err != nil {
		t.Fatalf("plug's Lock = %v", err)
	}
	shared := e.open(t, clientOpts{proxied: e.network, pool: 8, ttl: herdTTL})
	// The bytes one failed attempt sends, measured on the shared client
	// while the plug holds: the unit the herd's traffic is counted in.
	var perAttempt int64
	if shared.bytes != nil {
		m, err := shared.mutex(name)
		if err != nil {
			t.Fatal(err)
		}
		for range 3 {
			before := shared.bytes.up.Load()
			if _, err := m.TryLock(ctx); !errors.Is(err, baton.ErrNotAcquired) {
				t.Fatalf("TryLock while the plug holds = %v, want ErrNotAcquired", err)
			}
			perAttempt = shared.bytes.up.Load() - before
		}
	}
	ws := make([]*holder, n)
	for i := range ws {
		ws[i] = newHolder(t, run, e, "w"+strconv.Itoa(i), name, clientOpts{share: shared})
	}
	for _, w := range ws {
		wg.Go(func() { // owner: this test (wg)
			l, err := w.lock(ctx)
			if err != nil {
				t.Errorf("%s's Lock = %v", w.id, err)
				return
			}
			hold := time.After(5 * time.Millisecond)
			if ferr, uerr := res.increment(ctx, run, w.id, l.Token(), l.Owner()); ferr != nil || uerr != nil {
				t.Errorf("%s's increment = %v, %v", w.id, ferr, uerr)
			}
			<-hold
			if err := w.release(ctx, l); err != nil {
				t.Errorf("%s's Release = %v", w.id, err)
			}
		})
	}
	waitEntries(t, e, name, n+1)
	var up0 int64
	if shared.bytes != nil {
		up0 = shared.bytes.up.Load()
	}
	start := time.Now()
	_ = plug.release(ctx, lp)
	wg.Wait()
	took := time.Since(start)

	events := run.Rec.Events()
	grants := map[string]int{}
	for _, g := range drill.Grants(events, name) {
		grants[g.Client]++
	}
	for _, w := range ws {
		if grants[w.id] != 1 {
			t.Errorf("%s acquired %d times, want exactly once", w.id, grants[w.id])
		}
	}
	run.Report(drill.CheckTokens(events))
	run.Report(drill.CheckExclusive(events))
	res.check(t, run, false)
	run.Report(drill.Orphans(ctx, name, time.Second, e.scan))
	if shared.bytes == nil || perAttempt <= 0 {
		t.Logf("%d waiters handed over in %v", n, took)
		return -1
	}
	// Requests the herd sent: attempts, plus one release and the holder's
	// renewals per handoff (counted as attempts: an upper bound). Waiting
	// waiters summed over the handoffs: n + (n-1) + … + 1.
	attempts := float64(shared.bytes.up.Load()-up0) / float64(perAttempt)
	waiting := float64(n*(n+1)) / 2
	t.Logf("%d waiters handed over in %v: ≈%.0f attempts (%d bytes each), %.2f per handoff, %.2f per waiting waiter and handoff",
		n, took, attempts, perAttempt, attempts/float64(n), attempts/waiting)
	return attempts / waiting
}

// cancelAtRelease is row 10's race on a lease engine: the racer waits
// behind a plug, and its context is cancelled at the moment the plug
// releases, which wakes it. Lock returns a lease or the context's error,
// and when it returns the error it holds nothing: next, waiting too, is
// granted within a TTL, not blocked by a grant the racer abandoned.
func cancelAtRelease(t *testing.T, e *engine, seed uint64) {
	run := drilltest.Start(t, seed)
	name := lockName("row10r", e, seed)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	plug := newHolder(t, run, e, "plug", name, clientOpts{})
	lp, err := plug.lock(ctx)
	if err != nil {
		t.Fatalf("plug's Lock = %v", err)
	}
	wctx, wcancel := context.WithCancel(ctx)
	defer wcancel()
	racer := newHolder(t, run, e, "racer", name, clientOpts{})
	next := newHolder(t, run, e, "next", name, clientOpts{})
	type result struct {
		l   *baton.Lease
		err error
		at  time.Time
	}
	rres := make(chan result, 1)
	go func() { // owner: this test, which receives on rres
		l, err := racer.lock(wctx)
		rres <- result{l, err, time.Now()}
	}()
	waitEntries(t, e, name, 2)
	nl := make(chan *baton.Lease, 1)
	go func() { // owner: this test, which receives on nl
		// next starts later, so the racer is usually woken first.
		time.Sleep(50 * time.Millisecond)
		l, err := next.lock(ctx)
		if err != nil {
			t.Errorf("next's Lock = %v", err)
		}
		nl <- l
	}()
	time.Sleep(100 * time.Millisecond)
	// The cancel lands within a few hundred microseconds of the release,
	// on either side of it, as the seed decides.
	delay := time.Duration(run.Rand.IntN(1000)) * time.Microsecond
	var cwg sync.WaitGroup
	cwg.Go(func() {
		time.Sleep(delay)
		run.Rec.Info("racer", "cancel", name, fmt.Sprintf("%v after the release began", delay))
		wcancel()
	})
	_ = plug.release(ctx, lp)
	cwg.Wait()
	cancelled := time.Now()
	r := <-rres
	switch {
	case r.err == nil:
		t.Logf("the racer's grant won the race with the cancel (token %d)", r.l.Token())
		if err := racer.release(ctx, r.l); err != nil {
			t.Errorf("racer's Release = %v", err)
		}
	case !errors.Is(r.err, context.Canceled):
		t.Errorf("racer's Lock = %v, want context.Canceled or a lease", r.err)
	case r.at.Sub(cancelled) > cancelSlack:
		t.Errorf("racer's Lock returned %v after its cancel, want ≤ %v", r.at.Sub(cancelled), cancelSlack)
	default:
		t.Logf("the cancel won: %v", r.err)
	}
	select {
	case l := <-nl:
		if l != nil {
			_ = next.release(ctx, l)
		}
	case <-time.After(e.ttl):
		t.Fatalf("next waiter not granted within TTL: the cancelled racer's grant leaked")
	}
	events := run.Rec.Events()
	run.Report(drill.CheckExclusive(events))
	run.Report(drill.CheckTokens(events))
	run.Report(drill.Orphans(ctx, name, time.Second, e.scan))
}

// waiterBackendKilled is row 12 on SQL: the database server ends the
// waiter's connections (pg_terminate_backend on every backend of its
// pool, three times while it waits, the last one as the holder releases).
//
// What sqllock guarantees: a waiter holds no row, so there is no session
// or position to lose. An attempt on a killed connection fails with an
// unknown outcome, is abandoned (an owner-checked release of whatever it
// may have taken), and the next attempt opens a new connection. The
// waiter keeps waiting — it is not told ErrSessionLost, since the database
// answered meanwhile — and acquires once the holder releases, exactly
// once, with a larger token, and is then held by renewals on its new
// connections; nothing of the killed attempts is left.
//
// On MariaDB the waiter connects as a user of its own, and KILL ends every
// connection of that user. It runs on PostgreSQL and MariaDB only (see
// TestRow12WaiterSessionExpires).
func waiterBackendKilled(t *testing.T, e *engine, seed uint64) {
	run := drilltest.Start(t, seed)
	name := lockName("row12", e, seed)
	res := newCounters(t, run)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a := newHolder(t, run, e, "a", name, clientOpts{})
	la, err := a.lock(ctx)
	if err != nil {
		t.Fatalf("A's Lock = %v", err)
	}
	app := fmt.Sprintf("drill-row12-%d", seed)
	if e.name == "mysql" {
		mysqlAppUser(t, e, app)
	}
	w := newHolder(t, run, e, "w", name, clientOpts{appName: app})
	type result struct {
		l   *baton.Lease
		err error
		at  int64
	}
	got := make(chan result, 1)
	go func() { // owner: this test, which receives on got
		l, err := w.lock(ctx)
		got <- result{l, err, drill.Now()}
	}()
	waitEntries(t, e, name, 2)

	kill := func(what string) int {
		if e.name == "mysql" {
			heal := run.Rec.Fault("w", "KILL the waiter's connections "+what)
			defer heal()
			return mysqlKillUser(ctx, t, e, app)
		}
		heal := run.Rec.Fault("w", "pg_terminate_backend "+what)
		defer heal()
		var n int
		err := e.sql.admin.QueryRowContext(ctx, `SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1) k`, app).Scan(&n)
		if err != nil {
			t.Errorf("pg_terminate_backend: %v", err) // not Fatal: kill also runs on another goroutine
		}
		return n
	}
	killed := 0
	for i := range 2 {
		killed += kill(fmt.Sprintf("#%d", i+1))
		time.Sleep(e.ttl / 3)
	}
	select {
	case r := <-got:
		t.Fatalf("waiter's Lock returned (%v) while the holder holds, after its connections were killed; want it to keep waiting", r.err)
	default:
	}
	// The last kill races the holder's release.
	var kwg sync.WaitGroup
	kwg.Go(func() { killed += kill("#3, racing the release") })
	releasedAt := drill.Now()
	if err := a.release(ctx, la); err != nil {
		t.Errorf("A's Release = %v", err)
	}
	kwg.Wait()
	t.Logf("%d backends of the waiter terminated", killed)
	if killed == 0 {
		t.Errorf("no backend of the waiter (application_name %q) was found to terminate: the drill did not inject its fault", app)
	}
	var r result
	select {
	case r = <-got:
	case <-time.After(2 * e.ttl):
		t.Fatalf("waiter not granted within 2×TTL of the holder's release")
	}
	if r.err != nil {
		t.Fatalf("waiter's Lock = %v; want a grant (its killed connections were replaced, the database answered)", r.err)
	}
	// The waiter was woken by the release in this process, or retried on
	// its backoff (≤ TTL/4) after a killed attempt.
	if d := time.Duration(r.at - releasedAt); d > e.ttl/4+time.Second {
		t.Errorf("waiter granted %v after the release, want ≤ %v", d, e.ttl/4+time.Second)
	}
	if r.l.Token() <= la.Token() {
		t.Errorf("waiter's token %d, want > the holder's %d (I2)", r.l.Token(), la.Token())
	}
	// Its lease lives on new connections: it survives a renewal or two.
	time.Sleep(e.ttl / 2)
	if st := r.l.State(); st != baton.Held {
		t.Errorf("waiter's lease is %v %v after the grant, want held", st, e.ttl/2)
	}
	if ferr, uerr := res.increment(ctx, run, w.id, r.l.Token(), r.l.Owner()); ferr != nil || uerr != nil {
		t.Errorf("waiter's increment = %v, %v", ferr, uerr)
	}
	if err := w.release(ctx, r.l); err != nil {
		t.Errorf("waiter's Release = %v", err)
	}
	events := run.Rec.Events()
	run.Report(drill.CheckTokens(events))
	run.Report(drill.CheckExclusive(events))
	res.check(t, run, false)
	run.Report(drill.Orphans(ctx, name, 2*e.ttl, e.scan))
}

// mysqlAppUser creates a MariaDB user named app with every privilege on
// the drill's database, dropped at cleanup: the waiter of row 12 connects
// as it, so that its connections can be found and killed.
func mysqlAppUser(t *testing.T, e *engine, app string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	user := "'" + app + "'@'%'"
	cfg, err := mysql.ParseDSN(e.sql.dsn)
	if err != nil {
		t.Fatalf("mysql.ParseDSN: %v", err)
	}
	for _, q := range []string{
		"CREATE USER IF NOT EXISTS " + user,
		"GRANT ALL PRIVILEGES ON `" + cfg.DBName + "`.* TO " + user,
	} {
		if _, err := e.sql.admin.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		mysqlKillUser(ctx, t, e, app)
		if _, err := e.sql.admin.ExecContext(ctx, "DROP USER IF EXISTS "+user); err != nil {
			t.Errorf("DROP USER %s: %v", user, err)
		}
	})
}

// mysqlKillUser ends every connection of user app and returns how many.
func mysqlKillUser(ctx context.Context, t *testing.T, e *engine, app string) int {
	rows, err := e.sql.admin.QueryContext(ctx, `SELECT ID FROM information_schema.PROCESSLIST WHERE USER = ?`, app)
	if err != nil {
		t.Errorf("listing %s's connections: %v", app, err)
		return 0
	}
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err == nil {
			ids = append(ids, id)
		}
	}
	rows.Close()
	n := 0
	for _, id := range ids {
		if _, err := e.sql.admin.ExecContext(ctx, "KILL CONNECTION "+strconv.FormatInt(id, 10)); err == nil {
			n++
		}
	}
	return n
}
