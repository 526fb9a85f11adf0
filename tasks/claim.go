package tasks

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/baton-go/baton"
)

// Claim is one claimant's ownership of one task: the (owner, epoch,
// version) its writes are conditional on. Every write checks all three,
// the state Running and an unexpired lease in the same UPDATE, and
// advances the version; a write that affects no row changed nothing and
// reports why: a *StaleError (baton.ErrStaleToken) when another claimant
// took the task over or it moved on, an error wrapping baton.ErrLost when
// the lease expired by the database's clock and nobody has taken it over
// yet (the task now belongs to whoever takes it over, possibly this
// process again through Takeover with a new epoch).
//
// A Claim is safe for concurrent use (a heartbeat goroutine beside the
// worker): its writes run one at a time, each on the version the previous
// one left.
type Claim struct {
	s   *Store
	c   Claimant
	key string

	mu      sync.Mutex
	version int64
	task    Task
	ended   error // set when a write found the claim stale, lost or finished
}

// Key returns the task's key.
func (cl *Claim) Key() string { return cl.key }

// Claimant returns who holds the claim.
func (cl *Claim) Claimant() Claimant { return cl.c }

// Task returns the task as of the last successful write of this claim:
// Task().Checkpoint is where to resume, Task().Payload what to do.
func (cl *Claim) Task() Task {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	return cl.task
}

// Heartbeat extends the lease to Options.Lease from now (the database's
// clock). Call it well within the lease (a third of it); a heartbeat after
// the lease expired fails with baton.ErrLost and does not revive it.
func (cl *Claim) Heartbeat(ctx context.Context) error {
	return cl.write(ctx, "heartbeat", `lease_until = `+cl.s.f.NowUS+` + ?`, cl.s.lease.Microseconds())
}

// Checkpoint records progress: data replaces the task's checkpoint, and
// whoever takes the task over resumes from it. It is fenced like every
// write, so a superseded owner cannot move the checkpoint of the task's
// new owner. Keep the checkpoint consistent with the work's own effects:
// write it in the same transaction as them where you can, and make the
// steps after it idempotent, since work done after the last checkpoint is
// done again by the next owner.
func (cl *Claim) Checkpoint(ctx context.Context, data []byte) error {
	return cl.write(ctx, "checkpoint", `checkpoint = ?`, data)
}

// Complete ends the task Done with result. Only the current owner's
// Complete affects the row; a superseded owner's returns a *StaleError and
// its result is discarded.
func (cl *Claim) Complete(ctx context.Context, result []byte) error {
	return cl.write(ctx, "complete", `state = 'DONE', result = ?, lease_until = 0`, result)
}

// Fail ends the task Failed with reason, for errors no retry will fix.
func (cl *Claim) Fail(ctx context.Context, reason string) error {
	return cl.write(ctx, "fail", `state = 'FAILED', err_text = ?, lease_until = 0`, reason)
}

// Retry gives the task back: Pending again, due after delay (database
// clock), keeping its checkpoint, owner and epoch. The stored epoch means
// a claimant with an older grant cannot claim it next.
func (cl *Claim) Retry(ctx context.Context, delay time.Duration) error {
	if delay < 0 {
		return invalid("negative delay %v", delay)
	}
	return cl.write(ctx, "retry", `state = 'PENDING', lease_until = 0, next_run = `+cl.s.f.NowUS+` + ?`, delay.Microseconds())
}

// write runs one fenced transition: set, plus version+1 and updated_us,
// WHERE key, owner, epoch, version, Running, and the lease unexpired.
func (cl *Claim) write(ctx context.Context, op, set string, arg any) error {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if cl.ended != nil {
		return cl.ended
	}
	s := cl.s
	ok, err := s.exec(ctx, `UPDATE `+s.table+` SET `+set+`, version = version + 1, updated_us = `+s.f.NowUS+`
WHERE task_key = ? AND owner = ? AND epoch = ? AND version = ? AND state = 'RUNNING' AND lease_until >= `+s.f.NowUS,
		arg, cl.key, cl.c.Owner, int64(cl.c.Epoch), cl.version)
	if err != nil {
		return fmt.Errorf("tasks: %s %q: %w", op, cl.key, err)
	}
	now, gerr := s.Get(ctx, cl.key)
	if !ok {
		if gerr != nil {
			return fmt.Errorf("tasks: %s %q affected no row: %w", op, cl.key, gerr)
		}
		if now.Version == cl.version && now.Owner == cl.c.Owner && now.Epoch == cl.c.Epoch && now.State == Running {
			cl.ended = fmt.Errorf("tasks: %s %q: lease expired at %v (database clock): %w", op, cl.key, now.LeaseUntil, baton.ErrLost)
			if s.obs != nil {
				s.emit(ctx, "lost", cl.key, cl.c, cl.ended)
			}
		} else {
			cl.ended = s.stale(ctx, cl.key, cl.c, cl.version, now)
		}
		return cl.ended
	}
	cl.version++
	if gerr == nil && now.Version == cl.version {
		cl.task = now
	} else {
		cl.task.Version = cl.version
	}
	if op == "complete" || op == "fail" || op == "retry" {
		cl.ended = fmt.Errorf("tasks: %q: claim ended by %s: %w", cl.key, op, baton.ErrNotHeld)
	}
	if outcome := outcomes[op]; outcome != "" && s.obs != nil {
		s.emit(ctx, outcome, cl.key, cl.c, nil)
	}
	return nil
}

// outcomes names the reported writes (Event.Outcome); heartbeats are not.
var outcomes = map[string]string{"checkpoint": "checkpoint", "complete": "completed", "fail": "failed", "retry": "retry"}
