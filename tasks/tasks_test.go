package tasks_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/tasks"
)

var (
	runnerA = tasks.Claimant{Owner: "A", Epoch: 81}
	runnerB = tasks.Claimant{Owner: "B", Epoch: 82}
)

// j7AtV5 brings task J7 to the takeover story's starting point
// RUNNING/A/81/v5:
// enqueued (v1), claimed by A (v2), then a checkpoint, a heartbeat and a
// checkpoint (v3–v5).
func j7AtV5(t *testing.T, s *tasks.Store) *tasks.Claim {
	t.Helper()
	ctx := t.Context()
	if _, created, err := s.Enqueue(ctx, "J7", []byte("export rows 1..1000"), 0); err != nil || !created {
		t.Fatalf("Enqueue(J7) = %v, %v, want created", created, err)
	}
	a, err := s.Claim(ctx, runnerA)
	if err != nil {
		t.Fatalf("Claim(A/81) = %v", err)
	}
	for i, step := range []func() error{
		func() error { return a.Checkpoint(ctx, []byte("row 400")) },
		func() error { return a.Heartbeat(ctx) },
		func() error { return a.Checkpoint(ctx, []byte("row 800")) },
	} {
		if err := step(); err != nil {
			t.Fatalf("A's step %d = %v", i, err)
		}
	}
	if got := summary(get(t, s, "J7")); got != "RUNNING/A/81/v5" {
		t.Fatalf("J7 = %s, want RUNNING/A/81/v5", got)
	}
	return a
}

// TestJ7Takeover is the takeover story: A owns J7 at epoch 81, version 5,
// pauses, and its lease expires; B takes over with epoch 82 under
// version=5 AND epoch=81 AND lease expired; A's late commit with 81/v5
// affects no row; B completes with 82/v6 and only B's result stands.
func TestJ7Takeover(t *testing.T) {
	forEachDB(t, 700*time.Millisecond, func(t *testing.T, b backend) {
		ctx, s := t.Context(), b.store
		a := j7AtV5(t, s)

		// While A's lease runs, nobody takes J7 over.
		seen := get(t, s, "J7")
		if _, err := s.Takeover(ctx, seen, runnerB); !errors.Is(err, tasks.ErrNotExpired) || !errors.Is(err, baton.ErrNotAcquired) {
			t.Fatalf("Takeover(J7, B/82) during A's lease = %v, want %v and %v", err, tasks.ErrNotExpired, baton.ErrNotAcquired)
		}

		// A pauses (no heartbeat); the database's clock expires its lease.
		seen = waitExpired(t, s, "J7")
		if got := summary(seen); got != "RUNNING/A/81/v5" {
			t.Fatalf("expired J7 = %s, want RUNNING/A/81/v5", got)
		}
		// A claimant whose epoch is not above 81 cannot take it.
		old := tasks.Claimant{Owner: "C", Epoch: 81}
		if _, err := s.Takeover(ctx, seen, old); !errors.Is(err, baton.ErrStaleToken) {
			t.Fatalf("Takeover(J7, C/81) = %v, want %v", err, baton.ErrStaleToken)
		}
		bc, err := s.Takeover(ctx, seen, runnerB)
		if err != nil {
			t.Fatalf("Takeover(J7, B/82) = %v", err)
		}
		if got := summary(get(t, s, "J7")); got != "RUNNING/B/82/v6" {
			t.Fatalf("J7 after takeover = %s, want RUNNING/B/82/v6", got)
		}
		if cp := string(bc.Task().Checkpoint); cp != "row 800" {
			t.Errorf("B resumes from %q, want A's last checkpoint %q", cp, "row 800")
		}
		// A second takeover from the same snapshot finds the task changed.
		if _, err := s.Takeover(ctx, seen, tasks.Claimant{Owner: "D", Epoch: 90}); !errors.Is(err, tasks.ErrChanged) {
			t.Errorf("Takeover(J7, D/90) from the v5 snapshot = %v, want %v", err, tasks.ErrChanged)
		}

		// A wakes up and commits its result with 81/v5.
		err = a.Complete(ctx, []byte("A's result"))
		var se *tasks.StaleError
		if !errors.Is(err, baton.ErrStaleToken) || !errors.As(err, &se) {
			t.Fatalf("A.Complete (81/v5) = %v, want a *StaleError wrapping %v", err, baton.ErrStaleToken)
		}
		if se.StoredOwner != "B" || se.StoredEpoch != 82 || se.StoredVersion != 6 {
			t.Errorf("StaleError = %+v, want stored B/82/v6", *se)
		}
		if err := a.Checkpoint(ctx, []byte("row 900")); !errors.Is(err, baton.ErrStaleToken) {
			t.Errorf("A.Checkpoint after takeover = %v, want %v", err, baton.ErrStaleToken)
		}
		if task := get(t, s, "J7"); summary(task) != "RUNNING/B/82/v6" || task.Result != nil || string(task.Checkpoint) != "row 800" {
			t.Fatalf("J7 after A's late commit = %s result %q checkpoint %q, want RUNNING/B/82/v6, no result, checkpoint %q",
				summary(task), task.Result, task.Checkpoint, "row 800")
		}

		if err := bc.Complete(ctx, []byte("B's result")); err != nil {
			t.Fatalf("B.Complete (82/v6) = %v", err)
		}
		task := get(t, s, "J7")
		if summary(task) != "DONE/B/82/v7" || string(task.Result) != "B's result" || task.Attempts != 2 {
			t.Errorf("J7 = %s result %q attempts %d, want DONE/B/82/v7, %q, 2", summary(task), task.Result, task.Attempts, "B's result")
		}
		if err := bc.Heartbeat(ctx); !errors.Is(err, baton.ErrNotHeld) {
			t.Errorf("B.Heartbeat after Complete = %v, want %v", err, baton.ErrNotHeld)
		}
	})
}

// TestControlJ7UnconditionalCommit is the negative control of TestJ7Takeover:
// A commits the way a runner that trusts its lock would, with
// UPDATE … WHERE task_key = ? and no epoch/version condition. Its late
// result lands over B's. If this control stopped failing the invariant,
// the J7 test could not tell fencing from luck.
func TestControlJ7UnconditionalCommit(t *testing.T) {
	forEachDB(t, 500*time.Millisecond, func(t *testing.T, b backend) {
		ctx, s := t.Context(), b.store
		j7AtV5(t, s)
		bc, err := s.Takeover(ctx, waitExpired(t, s, "J7"), runnerB)
		if err != nil {
			t.Fatalf("Takeover(J7, B/82) = %v", err)
		}
		if err := bc.Complete(ctx, []byte("B's result")); err != nil {
			t.Fatalf("B.Complete = %v", err)
		}
		q := `UPDATE ` + b.table + ` SET state = 'DONE', result = 'A''s result' WHERE task_key = 'J7'`
		res, err := b.db.ExecContext(ctx, q)
		if err != nil {
			t.Fatalf("unconditional commit = %v", err)
		}
		if n, _ := res.RowsAffected(); n != 1 {
			t.Fatalf("unconditional commit affected %d rows, want 1 (the control must land)", n)
		}
		if got := string(get(t, s, "J7").Result); got != "A's result" {
			t.Fatalf("J7 result after the unconditional late commit = %q, want the stale %q to have overwritten B's", got, "A's result")
		}
	})
}

// TestLeaseExpiredIsLost: a write after the lease expired by the
// database's clock fails with baton.ErrLost even though nobody took the
// task over; the owner cannot silently revive an expired lease.
func TestLeaseExpiredIsLost(t *testing.T) {
	forEachDB(t, 300*time.Millisecond, func(t *testing.T, b backend) {
		ctx, s := t.Context(), b.store
		if _, _, err := s.Enqueue(ctx, "k", nil, 0); err != nil {
			t.Fatalf("Enqueue = %v", err)
		}
		c, err := s.Claim(ctx, runnerA)
		if err != nil {
			t.Fatalf("Claim = %v", err)
		}
		waitExpired(t, s, "k")
		if err := c.Heartbeat(ctx); !errors.Is(err, baton.ErrLost) {
			t.Fatalf("Heartbeat after expiry = %v, want %v", err, baton.ErrLost)
		}
		if err := c.Complete(ctx, []byte("late")); !errors.Is(err, baton.ErrLost) {
			t.Errorf("Complete after expiry = %v, want %v", err, baton.ErrLost)
		}
		if task := get(t, s, "k"); task.State != tasks.Running || task.Result != nil || task.Version != 2 {
			t.Errorf("task after the expired writes = %s result %q, want RUNNING/A/81/v2 untouched", summary(task), task.Result)
		}
		// The same runner may take it back, but only with a new epoch.
		again, err := s.Takeover(ctx, get(t, s, "k"), tasks.Claimant{Owner: "A", Epoch: 83})
		if err != nil {
			t.Fatalf("Takeover by A/83 = %v", err)
		}
		if err := again.Complete(ctx, []byte("ok")); err != nil {
			t.Errorf("Complete after re-takeover = %v", err)
		}
	})
}

// TestClaimExactlyOnce: many claimants race for one task; exactly one gets
// it, the rest see ErrNoTask.
func TestClaimExactlyOnce(t *testing.T) {
	forEachDB(t, 5*time.Second, func(t *testing.T, b backend) {
		ctx, s := t.Context(), b.store
		const claimants = 6
		for round := range 3 {
			key := fmt.Sprintf("race-%d", round)
			if _, _, err := s.Enqueue(ctx, key, nil, 0); err != nil {
				t.Fatalf("Enqueue(%q) = %v", key, err)
			}
			var (
				wg   sync.WaitGroup
				mu   sync.Mutex
				won  []string
				errs []error
			)
			for i := range claimants {
				wg.Go(func() {
					c, err := s.Claim(ctx, tasks.Claimant{Owner: fmt.Sprintf("w%d", i), Epoch: uint64(10*round + i + 1)})
					mu.Lock()
					defer mu.Unlock()
					switch {
					case err == nil:
						won = append(won, c.Claimant().Owner)
					case !errors.Is(err, tasks.ErrNoTask):
						errs = append(errs, err)
					}
				})
			}
			wg.Wait()
			if len(errs) > 0 {
				t.Fatalf("round %d: Claim errors %v", round, errs)
			}
			if len(won) != 1 {
				t.Fatalf("round %d: %d claimants won %q (%v), want exactly 1", round, len(won), key, won)
			}
			if task := get(t, s, key); task.Owner != won[0] || task.State != tasks.Running || task.Attempts != 1 {
				t.Errorf("round %d: task = %s attempts %d, want RUNNING by %s, 1 attempt", round, summary(task), task.Attempts, won[0])
			}
			// Finish it so the next round's claimants only see the new task.
			if _, err := b.db.ExecContext(ctx, `UPDATE `+b.table+` SET state = 'DONE'`); err != nil {
				t.Fatalf("finish round %d = %v", round, err)
			}
		}
	})
}

// TestControlUnconditionalClaim is the negative control of
// TestClaimExactlyOnce: two runners that each read the task as PENDING and
// then claim it with UPDATE … WHERE task_key = ? (no version condition)
// both succeed, and the task runs twice.
func TestControlUnconditionalClaim(t *testing.T) {
	forEachDB(t, 5*time.Second, func(t *testing.T, b backend) {
		ctx, s := t.Context(), b.store
		if _, _, err := s.Enqueue(ctx, "k", nil, 0); err != nil {
			t.Fatalf("Enqueue = %v", err)
		}
		// Both read before either writes: the interleaving is forced.
		for _, who := range []string{"A", "B"} {
			if st := get(t, s, "k").State; st != tasks.Pending {
				t.Fatalf("%s reads %s, want PENDING", who, st)
			}
		}
		owners := 0
		for _, who := range []string{"A", "B"} {
			res, err := b.db.ExecContext(ctx, `UPDATE `+b.table+` SET state = 'RUNNING', owner = '`+who+`' WHERE task_key = 'k'`)
			if err != nil {
				t.Fatalf("%s's unconditional claim = %v", who, err)
			}
			if n, _ := res.RowsAffected(); n == 1 {
				owners++
			}
		}
		if owners != 2 {
			t.Fatalf("unconditional claims succeeded %d times, want 2 (both runners believe they own the task)", owners)
		}
	})
}

// TestEnqueueIdempotent: the key is the task's identity; a repeated
// Enqueue changes nothing.
func TestEnqueueIdempotent(t *testing.T) {
	forEachDB(t, time.Second, func(t *testing.T, b backend) {
		ctx, s := t.Context(), b.store
		first, created, err := s.Enqueue(ctx, "export-88", []byte("v1"), 0)
		if err != nil || !created {
			t.Fatalf("Enqueue(export-88) = %v, %v, want created", created, err)
		}
		again, created, err := s.Enqueue(ctx, "export-88", []byte("v2"), 0)
		if err != nil || created {
			t.Fatalf("second Enqueue(export-88) = %v, %v, want not created", created, err)
		}
		if string(again.Payload) != "v1" || again.Version != first.Version {
			t.Errorf("second Enqueue returned payload %q v%d, want the first %q v%d", again.Payload, again.Version, "v1", first.Version)
		}
		if _, _, err := s.Enqueue(ctx, "later", nil, time.Hour); err != nil {
			t.Fatalf("Enqueue(later) = %v", err)
		}
		c, err := s.Claim(ctx, runnerA)
		if err != nil || c.Key() != "export-88" {
			t.Fatalf("Claim = %v, %v, want export-88 (the delayed task is not due)", c, err)
		}
		if _, err := s.Claim(ctx, runnerB); !errors.Is(err, tasks.ErrNoTask) {
			t.Errorf("Claim with only a delayed task = %v, want %v", err, tasks.ErrNoTask)
		}
	})
}

// TestRetryKeepsEpochFence: a task given back by Retry carries its epoch;
// a claimant with an older grant cannot claim it, a newer one can, and the
// checkpoint survives for it.
func TestRetryKeepsEpochFence(t *testing.T) {
	forEachDB(t, 5*time.Second, func(t *testing.T, b backend) {
		ctx, s := t.Context(), b.store
		if _, _, err := s.Enqueue(ctx, "k", nil, 0); err != nil {
			t.Fatalf("Enqueue = %v", err)
		}
		a, err := s.Claim(ctx, runnerA)
		if err != nil {
			t.Fatalf("Claim(A/81) = %v", err)
		}
		if err := a.Checkpoint(ctx, []byte("step 3")); err != nil {
			t.Fatalf("Checkpoint = %v", err)
		}
		if err := a.Retry(ctx, 0); err != nil {
			t.Fatalf("Retry = %v", err)
		}
		if _, err := s.Claim(ctx, tasks.Claimant{Owner: "Z", Epoch: 80}); !errors.Is(err, tasks.ErrNoTask) {
			t.Errorf("Claim(Z/80) of a task last run at 81 = %v, want %v", err, tasks.ErrNoTask)
		}
		if _, err := s.Claim(ctx, tasks.Claimant{Owner: "Z", Epoch: 81}); !errors.Is(err, tasks.ErrNoTask) {
			t.Errorf("Claim(Z/81) of a task last run by A/81 = %v, want %v", err, tasks.ErrNoTask)
		}
		c, err := s.Claim(ctx, runnerB)
		if err != nil {
			t.Fatalf("Claim(B/82) = %v", err)
		}
		if task := c.Task(); string(task.Checkpoint) != "step 3" || task.Attempts != 2 {
			t.Errorf("B's claim: checkpoint %q attempts %d, want %q, 2", task.Checkpoint, task.Attempts, "step 3")
		}
	})
}
