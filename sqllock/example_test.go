package sqllock_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/engine/leasekit"
	"github.com/baton-go/baton/sqllock"
)

// exampleDB opens a SQLite database in a fresh directory, as the package
// doc recommends; the examples run anywhere, without a server. The
// returned func closes it and removes the directory.
func exampleDB() (*sql.DB, func()) {
	dir, err := os.MkdirTemp("", "sqllock-example")
	if err != nil {
		panic(err)
	}
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "locks.db")+sqliteDSN)
	if err != nil {
		panic(err)
	}
	return db, func() { _ = db.Close(); _ = os.RemoveAll(dir) }
}

// Readers share the read side; a writer is refused while they hold, and
// its token exceeds theirs once it gets the lock.
func Example_rwMutex() {
	db, done := exampleDB()
	defer done()
	c, err := sqllock.New(db, sqllock.Options{})
	if err != nil {
		panic(err)
	}
	defer c.Close()
	ctx := context.Background()

	rw, err := c.RWMutex("reports/daily")
	if err != nil {
		panic(err)
	}
	r1, err := rw.RLock(ctx)
	if err != nil {
		panic(err)
	}
	r2, err := rw.RLock(ctx) // a plain context: a second, shared grant
	if err != nil {
		panic(err)
	}
	_, err = rw.TryLock(ctx)
	fmt.Println("writer while two readers hold:", errors.Is(err, baton.ErrNotAcquired))

	// A reader asking for the write side would deadlock with another
	// reader doing the same: refused.
	_, err = rw.Lock(r1.Context())
	fmt.Println("upgrade refused:", errors.Is(err, baton.ErrUpgradeRefused))

	_ = r1.Release(ctx)
	_ = r2.Release(ctx)
	w, err := rw.Lock(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Println("writer's token above the readers':", w.Token() > r1.Token() && w.Token() > r2.Token())
	_ = w.Release(ctx)
	// Output:
	// writer while two readers hold: true
	// upgrade refused: true
	// writer's token above the readers': true
}

// Two permits: a third acquirer is refused until one comes back. A client
// configured with another N is reported, not refused: OnDisagreement is
// the engine's own, reached through baton.As on the *baton.Semaphore.
func Example_semaphore() {
	db, done := exampleDB()
	defer done()
	c, err := sqllock.New(db, sqllock.Options{})
	if err != nil {
		panic(err)
	}
	defer c.Close()
	ctx := context.Background()

	s, err := c.Semaphore("exports", 2)
	if err != nil {
		panic(err)
	}
	a, _ := s.Acquire(ctx)
	b, _ := s.Acquire(ctx)
	_, err = s.TryAcquire(ctx)
	fmt.Println("third permit:", errors.Is(err, baton.ErrNotAcquired))

	one, err := c.Semaphore("exports", 1) // misconfigured
	if err != nil {
		panic(err)
	}
	reports, ok := baton.As[interface {
		OnDisagreement(func(leasekit.Disagreement))
	}](one)
	if !ok {
		panic("no OnDisagreement")
	}
	reports.OnDisagreement(func(d leasekit.Disagreement) { fmt.Printf("N=%d here, N=%d there\n", d.Want, d.Permits) })
	_, _ = one.TryAcquire(ctx) // reports each of the two permits once

	_ = a.Release(ctx)
	l, err := s.TryAcquire(ctx)
	fmt.Println("after a release:", err == nil)
	_ = l.Release(ctx)
	_ = b.Release(ctx)
	// Output:
	// third permit: true
	// N=1 here, N=2 there
	// N=1 here, N=2 there
	// after a release: true
}

// A leader campaigns with an ID that Leader reports, commits work with
// its epoch, and resigns in order.
func Example_election() {
	db, done := exampleDB()
	defer done()
	c, err := sqllock.New(db, sqllock.Options{})
	if err != nil {
		panic(err)
	}
	defer c.Close()
	ctx := context.Background()

	e, err := c.Election("scheduler")
	if err != nil {
		panic(err)
	}
	ld, err := e.CampaignAs(ctx, "worker-1")
	if err != nil {
		panic(err)
	}
	cur, err := e.Leader(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Println("leader:", cur.ID, "epoch > 0:", ld.Epoch() > 0)
	err = ld.Resign(ctx, baton.ResignPlan{
		Checkpoint: func(ctx context.Context, epoch uint64) error {
			// Save progress fenced by the epoch (package fence).
			return nil
		},
	})
	fmt.Println("resigned:", err)
	_, err = e.Leader(ctx)
	fmt.Println("no leader:", errors.Is(err, baton.ErrNoLeader))
	// Output:
	// leader: worker-1 epoch > 0: true
	// resigned: <nil>
	// no leader: true
}
