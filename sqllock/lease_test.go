package sqllock_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/baton-go/baton"
	batonengine "github.com/baton-go/baton/engine"
	"github.com/baton-go/baton/engine/leasekit/keeper"
	"github.com/baton-go/baton/sqllock"
)

// remainingSQL returns, for the row (name, slot 0, owner), how many
// microseconds are left before it expires on the database clock (negative:
// expired), per dialect.
func remainingSQL(backend string) string {
	switch backend {
	case "postgres":
		return `SELECT (extract(epoch FROM expires_at - clock_timestamp()) * 1000000)::bigint FROM baton_locks WHERE name = $1 AND slot = 0 AND owner = $2`
	case "mysql":
		return `SELECT TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), expires_at) FROM baton_locks WHERE name = ? AND slot = 0 AND owner = ?`
	}
	return `SELECT expires_at - CAST((julianday('now') - 2440587.5) * 86400000000.0 AS INTEGER) FROM baton_locks WHERE name = ? AND slot = 0 AND owner = ?`
}

func uniqueName(test string) string { return "sqltest/" + test + "/" + batonengine.NewOwnerID()[:12] }

// TestLostBeforeExpiry cuts a holder off the database and checks that it
// goes Suspended and then Lost while its row is still unexpired on the
// database clock: the keeper's deadline is strictly before the server's.
func TestLostBeforeExpiry(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			adminDB, _ := b.open(t, false)
			db, p := b.open(t, true)
			c := newClient(t, db, sqllock.Options{})
			name := uniqueName("lost")
			l := lock(t, c, name)
			time.Sleep(testTTL / 2) // at least one renewal
			killed := time.Now()
			if p != nil {
				if err := p.Blackhole(""); err != nil {
					t.Fatalf("Blackhole() = %v", err)
				}
			} else {
				_ = db.Close()
			}
			var states []baton.State
			for {
				st, changed := l.Observe()
				states = append(states, st)
				if st.Ended() {
					break
				}
				select {
				case <-changed:
				case <-time.After(2 * testTTL):
					t.Fatalf("lease still %v %v after the cut, want %v", st, time.Since(killed), baton.Lost)
				}
			}
			lostIn := time.Since(killed)
			var left int64
			ctx := opCtx(t, 5*time.Second)
			if err := adminDB.QueryRowContext(ctx, remainingSQL(b.name), name, l.Owner()).Scan(&left); err != nil {
				t.Fatalf("reading the row's expiry: %v", err)
			}
			t.Logf("%s: states %v; Lost %v after the cut with %v left on the database clock", b.name, states, lostIn.Round(time.Millisecond), time.Duration(left)*time.Microsecond)
			if states[len(states)-1] != baton.Lost {
				t.Errorf("final state = %v, want %v", states[len(states)-1], baton.Lost)
			}
			if len(states) < 3 || states[1] != baton.Suspended {
				t.Errorf("states = %v, want Held → Suspended → Lost", states)
			}
			if left <= 0 {
				t.Errorf("row had %v left on the database clock when Lost was observed, want > 0 (Lost strictly before expiry)", time.Duration(left)*time.Microsecond)
			}
			if err := l.Err(); !errors.Is(err, baton.ErrLost) || !errors.Is(err, keeper.ErrDeadline) {
				t.Errorf("Err() = %v, want an error wrapping %v and %v", err, baton.ErrLost, keeper.ErrDeadline)
			}
		})
	}
}

// TestTokensShared checks that tokens strictly increase across the grants
// of one name, that names share one counter (it advances once per grant,
// whatever the names), and that the counter does not grow with names.
func TestTokensShared(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			db, _ := b.open(t, false)
			// A prefix of its own: other packages' tests create their own
			// token sources on the same database.
			const prefix = "baton_tokshared_"
			c := newClient(t, db, sqllock.Options{TablePrefix: prefix})
			a, z := uniqueName("tokA"), uniqueName("tokB")
			var prev uint64
			for i, name := range []string{a, z, a, z, a} {
				l := lock(t, c, name)
				if l.Token() <= prev {
					t.Errorf("grant %d (%s): token %d after %d, want greater", i, name, l.Token(), prev)
				}
				prev = l.Token()
				if err := l.Release(opCtx(t, 5*time.Second)); err != nil {
					t.Fatalf("Release = %v", err)
				}
			}
			var q string
			switch b.name {
			case "postgres":
				q = `SELECT count(*) FROM information_schema.sequences WHERE sequence_name LIKE 'baton\_tokshared\_%'`
			default:
				q = `SELECT count(*) FROM ` + prefix + `tokens`
			}
			var n int
			if err := db.QueryRowContext(opCtx(t, 5*time.Second), q).Scan(&n); err != nil {
				t.Fatalf("%s = %v", q, err)
			}
			if n != 1 {
				t.Errorf("token sources after grants on two names = %d, want 1", n)
			}
		})
	}
}

// TestStaleReleaseAfterRegrant: a release never frees a newer grant. A holder cut off the database is
// Lost, its row expires and another client takes it; when the first
// client's connection comes back, its queued background release runs, and
// must not free the new grant.
func TestStaleReleaseAfterRegrant(t *testing.T) {
	for _, b := range backends(t) {
		if b.name == "sqlite" {
			continue // no network to heal: the cut is a closed *sql.DB
		}
		t.Run(b.name, func(t *testing.T) {
			db1, p := b.open(t, true)
			db2, _ := b.open(t, false)
			c1 := newClient(t, db1, sqllock.Options{})
			c2 := newClient(t, db2, sqllock.Options{})
			name := uniqueName("i9")
			l1 := lock(t, c1, name)
			if err := p.Blackhole(""); err != nil {
				t.Fatalf("Blackhole() = %v", err)
			}
			// Release while cut off: it fails and the hold stays.
			rctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
			if err := l1.Release(rctx); err == nil {
				t.Errorf("Release through a blackhole = nil, want an error")
			}
			cancel()
			select {
			case <-l1.Done():
			case <-time.After(3 * testTTL):
				t.Fatalf("holder not Lost %v after the cut", 3*testTTL)
			}
			l2 := lock(t, c2, name) // after the row expired
			if l2.Token() <= l1.Token() {
				t.Errorf("new token %d, want > %d", l2.Token(), l1.Token())
			}
			before := sqllock.Of(c1).Stats().Releases
			p.Heal()
			// The healed client retries its queued owner-checked release.
			deadline := time.Now().Add(3 * testTTL)
			for sqllock.Of(c1).Stats().Releases == before && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
			t.Logf("%s: background releases after heal: %d", b.name, sqllock.Of(c1).Stats().Releases-before)
			if err := l1.Release(opCtx(t, 5*time.Second)); !errors.Is(err, baton.ErrLost) {
				t.Errorf("Release of the lost lease = %v, want an error wrapping %v", err, baton.ErrLost)
			}
			time.Sleep(testTTL) // past another renewal of l2
			if st := l2.State(); st != baton.Held {
				t.Errorf("new holder's State() after the stale release = %v, want %v", st, baton.Held)
			}
			es, err := sqllock.Of(c2).Entries(opCtx(t, 5*time.Second), name)
			if err != nil || len(es) != 1 || es[0] != fmt.Sprintf("0/mutex/%s", l2.Owner()) {
				t.Errorf("Entries = %q, %v, want only the new holder's row", es, err)
			}
			if err := l2.Release(opCtx(t, 5*time.Second)); err != nil {
				t.Errorf("new holder's Release = %v", err)
			}
		})
	}
}

// TestLockFor checks the fixed lease time: no renewal, Lost before the
// row expires, and the next client gets the lock after it.
func TestLockFor(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			db, _ := b.open(t, false)
			c := newClient(t, db, sqllock.Options{TTL: 10 * time.Second})
			warm(t, c) // the first use's schema check is not in the lease's time
			name := uniqueName("fixed")
			m, err := c.Mutex(name)
			if err != nil {
				t.Fatalf("Mutex = %v", err)
			}
			start := time.Now()
			fixed, ok := baton.As[interface {
				LockFor(context.Context, time.Duration) (*baton.Lease, error)
			}](m)
			if !ok {
				t.Fatal("baton.As: the SQL mutex has no LockFor")
			}
			l, err := fixed.LockFor(opCtx(t, 5*time.Second), time.Second)
			if err != nil {
				t.Fatalf("LockFor(1s) = %v", err)
			}
			select {
			case <-l.Done():
			case <-time.After(3 * time.Second):
				t.Fatalf("fixed-time lease not ended 3s after a 1s lease time")
			}
			lostIn := time.Since(start)
			if !errors.Is(l.Err(), keeper.ErrFixedExpired) || lostIn >= time.Second || lostIn < 500*time.Millisecond {
				t.Errorf("fixed lease ended after %v with %v, want Lost (%v) within (0.5s, 1s)", lostIn, l.Err(), keeper.ErrFixedExpired)
			}
			m2, _ := newClient(t, db, sqllock.Options{TTL: 10 * time.Second}).Mutex(name)
			l2, err := m2.Lock(opCtx(t, 5*time.Second))
			if err != nil {
				t.Fatalf("Lock after the fixed lease = %v", err)
			}
			if took := time.Since(start); took < time.Second {
				t.Errorf("next grant %v after the fixed grant, want ≥ 1s (the row's lease time)", took)
			}
			_ = l2.Release(opCtx(t, 5*time.Second))
		})
	}
}

// TestNoMigrate: with Options.NoMigrate a client runs no DDL: on a
// database without the schema its first acquire fails with an error that
// says to run Migrate, and the table is still missing afterwards; once
// Migrate ran, the same client locks.
func TestNoMigrate(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			db, _ := b.open(t, false)
			prefix := "baton_nomig_" + batonengine.NewOwnerID()[:8] + "_"
			t.Cleanup(func() {
				for _, obj := range []string{"TABLE " + prefix + "locks", "TABLE " + prefix + "tokens", "SEQUENCE " + prefix + "token_seq"} {
					if b.name == "sqlite" && strings.HasPrefix(obj, "SEQUENCE") {
						continue
					}
					_, _ = db.Exec("DROP " + obj + " IF EXISTS " + strings.Fields(obj)[1])
				}
			})
			c := newClient(t, db, sqllock.Options{TablePrefix: prefix, NoMigrate: true})
			m, err := c.Mutex(uniqueName("nomigrate"))
			if err != nil {
				t.Fatalf("Mutex() = %v", err)
			}
			l, err := m.TryLock(opCtx(t, 5*time.Second))
			if err == nil {
				_ = l.Release(opCtx(t, 5*time.Second))
				t.Fatalf("TryLock without the schema and with NoMigrate = a lease, want an error")
			}
			if !strings.Contains(err.Error(), "Migrate") || !strings.Contains(err.Error(), prefix+"locks") {
				t.Errorf("TryLock without the schema = %v, want an error naming the table and Migrate", err)
			}
			if _, qerr := db.ExecContext(opCtx(t, 5*time.Second), "SELECT 1 FROM "+prefix+"locks"); qerr == nil {
				t.Errorf("table %slocks exists after a NoMigrate client's acquire, want no DDL", prefix)
			}
			if err := sqllock.Migrate(opCtx(t, 10*time.Second), db, sqllock.Options{TablePrefix: prefix}); err != nil {
				t.Fatalf("Migrate() = %v", err)
			}
			l, err = m.TryLock(opCtx(t, 5*time.Second))
			if err != nil {
				t.Fatalf("TryLock after Migrate = %v, want a lease", err)
			}
			if err := l.Release(opCtx(t, 5*time.Second)); err != nil {
				t.Errorf("Release() = %v", err)
			}
		})
	}
}

// TestMigrateAddsData: a locks table created before the data column
// existed gets it from Migrate, and the recipes that store data work.
func TestMigrateAddsData(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			db, _ := b.open(t, false)
			prefix := "baton_olddata_" + batonengine.NewOwnerID()[:8] + "_"
			t.Cleanup(func() {
				_, _ = db.Exec("DROP TABLE IF EXISTS " + prefix + "locks")
				_, _ = db.Exec("DROP TABLE IF EXISTS " + prefix + "tokens")
				if b.name != "sqlite" {
					_, _ = db.Exec("DROP SEQUENCE IF EXISTS " + prefix + "token_seq")
				}
			})
			o := sqllock.Options{TablePrefix: prefix}
			ctx := opCtx(t, 20*time.Second)
			if err := sqllock.Migrate(ctx, db, o); err != nil {
				t.Fatalf("Migrate() = %v", err)
			}
			if _, err := db.ExecContext(ctx, "ALTER TABLE "+prefix+"locks DROP COLUMN data"); err != nil {
				t.Fatalf("dropping the data column: %v", err)
			}
			for range 2 { // the second run finds the column
				if err := sqllock.Migrate(ctx, db, o); err != nil {
					t.Fatalf("Migrate() on the old table = %v", err)
				}
			}
			c := newClient(t, db, sqllock.Options{TablePrefix: prefix, NoMigrate: true})
			e, err := c.Election(uniqueName("olddata"))
			if err != nil {
				t.Fatalf("Election() = %v", err)
			}
			ld, err := e.CampaignAs(ctx, "candidate-7")
			if err != nil {
				t.Fatalf("CampaignAs() = %v", err)
			}
			if cur, err := e.Leader(ctx); err != nil || cur.ID != "candidate-7" {
				t.Errorf("Leader() = %+v, %v, want ID candidate-7", cur, err)
			}
			if err := ld.Resign(ctx, baton.ResignPlan{}); err != nil {
				t.Errorf("Resign() = %v", err)
			}
		})
	}
}

// TestDeadWaitingWriter: a waiting writer holds new readers back (writers
// are not starved), and when its client is cut off the database its
// intent row expires by the database clock, so readers get in again
// within about a TTL; a reader cut off the same way never blocked anyone
// beyond its own lease.
func TestDeadWaitingWriter(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			db1, _ := b.open(t, false)
			db2, p := b.open(t, true)
			if b.name == "mysql" {
				// A writer cut off inside an attempt's transaction keeps
				// the name's guard row locked until the server ends the
				// session: the package doc advises MariaDB's
				// idle_transaction_timeout for lock clients, and this
				// one follows it.
				db2, p = openMySQL(t, true, map[string]string{"idle_transaction_timeout": "1"})
			}
			db3, _ := b.open(t, false)
			c1, c2, c3 := newClient(t, db1, sqllock.Options{}), newClient(t, db2, sqllock.Options{}), newClient(t, db3, sqllock.Options{})
			name := uniqueName("deadwriter")
			rw := func(c *baton.Client) *baton.RWMutex {
				m, err := c.RWMutex(name)
				if err != nil {
					t.Fatalf("RWMutex(%q) = %v", name, err)
				}
				return m
			}
			r1, err := rw(c1).RLock(opCtx(t, 10*time.Second))
			if err != nil {
				t.Fatalf("RLock() = %v", err)
			}
			done := make(chan error, 1)
			go func() { // owned by this test: its context ends within 10s
				l, err := rw(c2).Lock(opCtx(t, 10*time.Second))
				if l != nil {
					_ = l.Release(context.Background())
					err = errors.New("granted")
				}
				done <- err
			}()
			waiting := func() bool {
				es, err := sqllock.Of(c1).Entries(opCtx(t, 5*time.Second), name)
				return err == nil && len(es) == 2
			}
			deadline := time.Now().Add(5 * time.Second)
			for !waiting() {
				if time.Now().After(deadline) {
					t.Fatalf("the waiting writer's intent row did not appear within 5s")
				}
				time.Sleep(20 * time.Millisecond)
			}
			m3 := rw(c3)
			if l, err := m3.TryRLock(opCtx(t, 5*time.Second)); !errors.Is(err, baton.ErrNotAcquired) {
				if l != nil {
					_ = l.Release(opCtx(t, 5*time.Second))
				}
				t.Errorf("TryRLock while a writer waits = %v, want an error wrapping %v (readers must not starve the writer)", err, baton.ErrNotAcquired)
			}
			killed := time.Now()
			if p != nil {
				if err := p.Blackhole(""); err != nil {
					t.Fatalf("Blackhole() = %v", err)
				}
			} else {
				_ = db2.Close()
			}
			var l3 *baton.Lease
			for l3 == nil {
				l, err := m3.TryRLock(opCtx(t, 5*time.Second))
				switch {
				case err == nil:
					l3 = l
				case time.Since(killed) > 2*testTTL:
					// Until then an attempt may also time out behind the
					// cut-off writer's open transaction (PostgreSQL ends it
					// after TTL/3 idle).
					t.Fatalf("readers still held back %v after the waiting writer was cut off, want ≤ %v (last: %v)", time.Since(killed), 2*testTTL, err)
				default:
					time.Sleep(20 * time.Millisecond)
				}
			}
			t.Logf("%s: a reader got in %v after the waiting writer was cut off", b.name, time.Since(killed).Round(time.Millisecond))
			if err := <-done; err == nil || err.Error() == "granted" {
				t.Errorf("the cut-off writer's Lock = %v, want an error", err)
			}
			for _, l := range []*baton.Lease{r1, l3} {
				if err := l.Release(opCtx(t, 5*time.Second)); err != nil {
					t.Errorf("Release() = %v", err)
				}
			}
		})
	}
}
