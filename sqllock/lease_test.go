package sqllock_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/keeper"
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

func uniqueName(test string) string { return "sqltest/" + test + "/" + baton.NewOwnerID()[:12] }

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
			c := newClient(t, db, sqllock.Options{})
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
				q = `SELECT count(*) FROM information_schema.sequences WHERE sequence_name LIKE 'baton\_%'`
			default:
				q = `SELECT count(*) FROM baton_tokens`
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

// TestStaleReleaseAfterRegrant (I9): a holder cut off the database is
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
			before := c1.Keeper().Stats().Releases
			p.Heal()
			// The healed client retries its queued owner-checked release.
			deadline := time.Now().Add(3 * testTTL)
			for c1.Keeper().Stats().Releases == before && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
			t.Logf("%s: background releases after heal: %d", b.name, c1.Keeper().Stats().Releases-before)
			if err := l1.Release(opCtx(t, 5*time.Second)); !errors.Is(err, baton.ErrLost) {
				t.Errorf("Release of the lost lease = %v, want an error wrapping %v", err, baton.ErrLost)
			}
			time.Sleep(testTTL) // past another renewal of l2
			if st := l2.State(); st != baton.Held {
				t.Errorf("new holder's State() after the stale release = %v, want %v", st, baton.Held)
			}
			es, err := c2.Entries(opCtx(t, 5*time.Second), name)
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
			name := uniqueName("fixed")
			m, err := c.Mutex(name)
			if err != nil {
				t.Fatalf("Mutex = %v", err)
			}
			start := time.Now()
			l, err := m.LockFor(opCtx(t, 5*time.Second), time.Second)
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
