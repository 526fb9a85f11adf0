package baton

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"
)

// Elector is a leader election on any engine: the queue engines'
// queuekit.Election and the lease engines' elections implement it, so that
// code (and the CLI's elect) campaigns the same way everywhere.
//
// Leadership is a lease: its context is cancelled when leadership is lost,
// and its token is the leadership's epoch, strictly greater than every
// earlier leader's. Commit work with the epoch so that a deposed leader's
// late writes are rejected (package fence, task tables).
type Elector interface {
	// Name returns the normalised election name.
	Name() string
	// Campaign blocks until this candidate leads or ctx ends, with
	// DefaultID as its ID.
	Campaign(ctx context.Context) (*Leader, error)
	// CampaignAs is Campaign with the candidate ID id.
	CampaignAs(ctx context.Context, id string) (*Leader, error)
	// Leader returns the current leader, or an error wrapping ErrNoLeader.
	Leader(ctx context.Context) (Candidate, error)
	// Observe sends the leader each time it changes (an empty Candidate
	// while there is none) until ctx ends or the engine fails; then it
	// closes the channel. The goroutine it starts is owned by ctx.
	Observe(ctx context.Context) (<-chan Candidate, error)
}

// Candidate describes one candidate of an election.
type Candidate struct {
	Entry   string // the engine's key, path or row
	Session string // the owning session or grant owner ("" where the engine cannot tell cheaply)
	ID      string // the candidate's ID (proposal), "" when unknown
}

// DefaultID returns the candidate ID Campaign stores: "<hostname>:<pid>",
// enough for an operator to find the leading process.
func DefaultID() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		h = "unknown-host"
	}
	return h + ":" + strconv.Itoa(os.Getpid())
}

// DefaultDrainTimeout bounds ResignPlan.Drain when its DrainTimeout is 0,
// so a stuck task cannot keep a resigning leader (and its successor)
// waiting forever: unfinished work is taken over through its lease and
// epoch instead.
const DefaultDrainTimeout = 10 * time.Second

// ResignPlan is the orderly hand-over, in this order: stop taking work,
// drain in-flight work with a bound, checkpoint, then release leadership.
// Releasing first would let a new leader dispatch while this one still
// does.
type ResignPlan struct {
	// Drain waits for in-flight work to finish; its context ends after
	// DrainTimeout. Nil skips draining.
	Drain        func(ctx context.Context) error
	DrainTimeout time.Duration // 0 means DefaultDrainTimeout
	// Checkpoint saves progress for the next leader, fenced by the epoch.
	// Nil skips it.
	Checkpoint func(ctx context.Context, epoch uint64) error
}

// Leader is a won election. It is written once over the leadership's
// lease, so every engine's leader drains, checkpoints and stops intake the
// same way.
type Leader struct {
	lease *Lease
	id    string

	mu        sync.Mutex
	resigning bool
}

// newLeader wraps the lease of a won election (engine.NewLeader). id is the
// candidate ID the leader campaigned with.
func newLeader(lease *Lease, id string) *Leader { return &Leader{lease: lease, id: id} }

// Lease returns the leadership lease.
func (ld *Leader) Lease() *Lease { return ld.lease }

// ID returns the candidate ID this leader campaigned with.
func (ld *Leader) ID() string { return ld.id }

// Epoch returns this leadership's epoch (its fencing token).
func (ld *Leader) Epoch() uint64 { return ld.lease.Token() }

// Context is cancelled when leadership ends (lost, or released by Resign).
func (ld *Leader) Context() context.Context { return ld.lease.Context() }

// Accepting reports whether the leader may take new work right now: it
// holds leadership, is not suspended and is not resigning. A suspended
// leader takes no new work until the session is confirmed again.
func (ld *Leader) Accepting() bool {
	ld.mu.Lock()
	r := ld.resigning
	ld.mu.Unlock()
	return !r && ld.lease.State() == Held
}

// Admit blocks while the leader is suspended and returns nil once it may
// take new work. It returns an error wrapping ErrLost when leadership is
// lost, ErrResigning once Resign began, or ctx's error.
func (ld *Leader) Admit(ctx context.Context) error {
	for {
		ld.mu.Lock()
		r := ld.resigning
		ld.mu.Unlock()
		if r {
			return ErrResigning
		}
		st, changed := ld.lease.Observe()
		switch st {
		case Held:
			return nil
		case Lost, Released:
			if err := ld.lease.Err(); err != nil {
				return err
			}
			return ErrLost
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Resign hands leadership over in order: Admit starts failing with
// ErrResigning at once, then Drain runs (bounded), then Checkpoint, then
// leadership is released. Errors from the steps are returned joined;
// leadership is released whatever they were.
func (ld *Leader) Resign(ctx context.Context, plan ResignPlan) error {
	ld.mu.Lock()
	ld.resigning = true
	ld.mu.Unlock()
	var errs []error
	if plan.Drain != nil {
		d := plan.DrainTimeout
		if d <= 0 {
			d = DefaultDrainTimeout
		}
		dctx, cancel := context.WithTimeout(ctx, d)
		if err := plan.Drain(dctx); err != nil {
			errs = append(errs, fmt.Errorf("baton: resign %q: drain: %w", ld.lease.Name(), err))
		}
		cancel()
	}
	if plan.Checkpoint != nil {
		if err := plan.Checkpoint(ctx, ld.Epoch()); err != nil {
			errs = append(errs, fmt.Errorf("baton: resign %q: checkpoint: %w", ld.lease.Name(), err))
		}
	}
	if err := ld.lease.Release(ctx); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
