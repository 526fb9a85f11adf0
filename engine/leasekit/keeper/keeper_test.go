package keeper_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/batontest/testenv"
	"github.com/baton-go/baton/engine"
	"github.com/baton-go/baton/engine/leasekit/keeper"
	"github.com/baton-go/baton/sqllock"
	_ "github.com/jackc/pgx/v5/stdlib"
)

// TestManyLeases holds 10 000 leases on one keeper (through the SQL engine
// on PostgreSQL) and checks that they cost no goroutine each, that every
// renewal round takes ceil(10000/BatchSize) round trips, and that all of
// them stay Held across several rounds.
func TestManyLeases(t *testing.T) {
	// 10 000 leases; under -race on a shared 2-core machine the detector's
	// cost on the acquiring goroutines starves the renewer, so the race
	// build holds 2 000 (still several batches per round).
	leases := 10000
	if raceEnabled {
		leases = 2000
	}
	const (
		batch = 500
		ttl   = 6 * time.Second // rounds of 21 batches under -race on a shared 2-core machine take up to ~1.5s
	)
	db, err := sql.Open("pgx", testenv.Postgres(t))
	if err != nil {
		t.Fatalf("sql.Open = %v", err)
	}
	t.Cleanup(func() { _ = db.Close() })
	db.SetMaxOpenConns(8)
	c, err := sqllock.New(db, sqllock.Options{TTL: ttl, BatchSize: batch})
	if err != nil {
		t.Fatalf("sqllock.New = %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	sc, ok := baton.As[*sqllock.Client](c) // for its keeper's Stats
	if !ok {
		t.Fatal("baton.As[*sqllock.Client] of sqllock.New's client failed")
	}
	prefix := "keepertest/" + engine.NewOwnerID()[:12] + "/"
	t.Cleanup(func() { // the rows stay as free tombstones: remove this test's
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := db.ExecContext(ctx, `DELETE FROM `+sqllock.DefaultTablePrefix+`locks WHERE name LIKE $1`, prefix+"%"); err != nil {
			t.Errorf("deleting the test's rows: %v", err)
		}
	})

	// One lease first, so the client's fixed goroutines (keeper, listener,
	// pool) exist before counting.
	first := lockOne(t, c, prefix+"first")
	time.Sleep(100 * time.Millisecond)
	before := runtime.NumGoroutine()

	held := make([]*baton.Lease, leases)
	var wg sync.WaitGroup
	// Fewer acquirers than pool connections: renewals share the pool.
	const workers = 4
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < leases; i += workers {
				m, err := c.Mutex(fmt.Sprintf("%s%d", prefix, i))
				if err != nil {
					errs <- err
					return
				}
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				l, err := m.TryLock(ctx)
				cancel()
				if err != nil {
					errs <- fmt.Errorf("TryLock(%d) = %w", i, err)
					return
				}
				held[i] = l
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	after := runtime.NumGoroutine()
	t.Logf("acquired %d leases, last renewal round took %v", leases, sc.Stats().LastRound)
	t.Logf("goroutines: %d with 1 lease, %d with %d leases", before, after, leases+1)
	if after-before > 10 {
		t.Errorf("goroutines grew by %d for %d leases, want a constant (≤ 10)", after-before, leases)
	}

	s0 := sc.Stats()
	time.Sleep(ttl + ttl/6) // three or four rounds
	s1 := sc.Stats()
	rounds, batches := s1.Rounds-s0.Rounds, s1.RenewBatches-s0.RenewBatches
	want := uint64((leases + batch) / batch) // ceil((leases+1)/batch)
	t.Logf("%d rounds, %d renewal batches (%d failed), %d held, last round %v", rounds, batches, s1.RenewFailures-s0.RenewFailures, s1.Held, s1.LastRound)
	if rounds < 3 {
		t.Errorf("%d renewal rounds in %v, want ≥ 3 (one every TTL/3)", rounds, ttl+ttl/6)
	}
	// The window may cut a round in two: allow one round's worth either way.
	if rounds > 0 && (batches+want < rounds*want || batches > (rounds+1)*want) {
		t.Errorf("%d batches in %d rounds, want %d per round (ceil(%d/%d))", batches, rounds, want, leases+1, batch)
	}
	if s1.Held != leases+1 || s1.Lost != s0.Lost || s1.Suspended != s0.Suspended || s1.RenewFailures != s0.RenewFailures {
		t.Errorf("Stats() = %+v after %+v, want %d held and no new loss, suspension or failure", s1, s0, leases+1)
	}
	for i, l := range held {
		if st := l.State(); st != baton.Held {
			t.Fatalf("lease %d: State() = %v (%v) after %v, want %v", i, st, l.Err(), ttl+ttl/6, baton.Held)
		}
	}
	_ = first
	if err := c.Close(); err != nil {
		t.Fatalf("Close() = %v", err)
	}
	if n := sc.Stats().Held; n != 0 {
		t.Errorf("held after Close = %d, want 0", n)
	}
}

func lockOne(t *testing.T, c *baton.Client, name string) *baton.Lease {
	t.Helper()
	m, err := c.Mutex(name)
	if err != nil {
		t.Fatalf("Mutex(%q) = %v", name, err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	l, err := m.Lock(ctx)
	if err != nil {
		t.Fatalf("Lock(%q) = %v", name, err)
	}
	return l
}

// TestNewRejects checks the keeper's option validation.
func TestNewRejects(t *testing.T) {
	st := newFakeStore(nil, 10)
	for _, c := range []struct {
		name  string
		store keeper.Store
		o     keeper.Options
	}{
		{"nil Store", nil, keeper.Options{TTL: time.Second}},
		{"no TTL", st, keeper.Options{}},
		{"negative TTL", st, keeper.Options{TTL: -time.Second}},
		{"BatchSize 0", newFakeStore(nil, 0), keeper.Options{TTL: time.Second}},
		{"negative DriftMargin", st, keeper.Options{TTL: time.Second, DriftMargin: -1}},
		{"DriftMargin TTL/2", st, keeper.Options{TTL: time.Second, DriftMargin: 500 * time.Millisecond}},
	} {
		if k, err := keeper.New(c.store, c.o); !errors.Is(err, baton.ErrInvalidOption) {
			if err == nil {
				_ = k.Close()
			}
			t.Errorf("New(%s) = %v, want %v", c.name, err, baton.ErrInvalidOption)
		}
	}
}

// TestDefaultDriftMargin checks the default margin: max(TTL/10, 100ms),
// or TTL/4 when that is not below TTL/2.
func TestDefaultDriftMargin(t *testing.T) {
	for _, c := range []struct{ ttl, want time.Duration }{
		{10 * time.Second, time.Second},
		{time.Second, 100 * time.Millisecond},
		{200 * time.Millisecond, 50 * time.Millisecond},
	} {
		k, err := keeper.New(newFakeStore(nil, 10), keeper.Options{TTL: c.ttl})
		if err != nil {
			t.Fatalf("New(TTL %v) = %v", c.ttl, err)
		}
		if got := k.DriftMargin(); got != c.want {
			t.Errorf("TTL %v: DriftMargin() = %v, want %v", c.ttl, got, c.want)
		}
		_ = k.Close()
	}
}
