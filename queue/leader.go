package queue

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/baton-go/baton"
)

// Election is leader election on a queue engine (Curator's LeaderLatch
// layout on ZooKeeper, "_c_<uuid>-latch-<seq>"; etcdctl elect's layout on
// etcd, "<name>/<lease hex>"). Candidates queue; the first is the leader;
// every other candidate watches its predecessor, so a resignation wakes one
// candidate.
//
// Each candidate stores its ID with its entry: the znode's data, which
// Curator's LeaderLatch reads as the participant id, and the etcd value,
// which `etcdctl elect -l NAME` prints as the leader's proposal. Campaign
// uses DefaultID ("<hostname>:<pid>"); CampaignAs sets another.
//
// Leadership is a lease: its context is cancelled when leadership is lost,
// and its token is the leadership's epoch, strictly greater than every
// earlier leader's. Commit work with the epoch so that a deposed leader's
// late writes are rejected (package fence, task tables). A lost leader is
// never leader again under that entry: campaign again for a new epoch.
type Election struct {
	r recipe
}

// NewElection returns the election called name on b.
func NewElection(b Backend, name string, opts MutexOptions) (*Election, error) {
	n, err := baton.ValidateName(name)
	if err != nil {
		return nil, err
	}
	return &Election{r: recipe{b: b, name: n, dir: n, kind: KindLatch, rule: first, hooks: opts.Hooks}}, nil
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

// Name returns the normalised election name.
func (e *Election) Name() string { return e.r.name }

// Campaign blocks until this candidate leads or ctx ends, with DefaultID as
// its ID. On ctx's end its candidacy is withdrawn by the session's cleanup.
func (e *Election) Campaign(ctx context.Context) (*Leader, error) {
	return e.CampaignAs(ctx, DefaultID())
}

// CampaignAs is Campaign with the candidate ID id (etcdctl elect's
// proposal; Curator LeaderLatch's id).
func (e *Election) CampaignAs(ctx context.Context, id string) (*Leader, error) {
	r := e.r
	r.data = []byte(id)
	l, err := r.acquire(ctx, true)
	if err != nil {
		return nil, err
	}
	return &Leader{lease: l, id: id}, nil
}

// Candidate describes one entry of the election's queue.
type Candidate struct {
	Entry   string // the engine's key or path
	Session string // the owning session ("" where the engine cannot tell cheaply: ZooKeeper)
	ID      string // the candidate's ID (proposal), "" when unknown
}

// Leader returns the current leader, or an error wrapping baton.ErrNoLeader.
func (e *Election) Leader(ctx context.Context) (Candidate, error) {
	s, err := e.r.b.Session(ctx, e.r.dir)
	if err != nil {
		return Candidate{}, err
	}
	defer e.r.b.Done(s, e.r.dir)
	for {
		snap, err := s.List(ctx, e.r.dir, Entry{})
		if err != nil {
			return Candidate{}, err
		}
		if len(snap.Entries) == 0 {
			return Candidate{}, fmt.Errorf("election %q: %w", e.r.name, baton.ErrNoLeader)
		}
		c, ok, err := describe(ctx, s, snap.Entries[0])
		if err != nil {
			return Candidate{}, err
		}
		if ok {
			return c, nil
		}
		// The head left between the read and its ID's read: look again.
	}
}

// describe builds the Candidate of entry h, reading its ID where the
// engine stores one; ok is false when h is already gone.
func describe(ctx context.Context, s Session, h Entry) (Candidate, bool, error) {
	c := Candidate{Entry: h.Key, Session: h.Owner}
	ds, ok := s.(DataSession)
	if !ok {
		return c, true, nil
	}
	// Every entry of an election is a candidate, whatever kind its value
	// suggests (an etcdctl proposal may look like anything).
	h.Kind = KindLatch
	data, ok, err := ds.Data(ctx, h)
	if err != nil || !ok {
		return Candidate{}, ok, err
	}
	c.ID = string(data)
	return c, true, nil
}

// Observe sends the leader each time it changes (an empty Candidate while
// there is none) until ctx ends or the observing session fails; then it
// closes the channel. The goroutine it starts is owned by ctx.
func (e *Election) Observe(ctx context.Context) (<-chan Candidate, error) {
	s, err := e.r.b.Session(ctx, e.r.dir)
	if err != nil {
		return nil, err
	}
	out := make(chan Candidate)
	go func() {
		defer close(out)
		defer e.r.b.Done(s, e.r.dir)
		last, first := Candidate{}, true
		for ctx.Err() == nil {
			snap, err := s.List(ctx, e.r.dir, Entry{})
			if err != nil {
				return
			}
			var cur Candidate
			var wake <-chan struct{}
			if len(snap.Entries) > 0 {
				h := snap.Entries[0]
				c, ok, err := describe(ctx, s, h)
				if err != nil {
					return
				}
				if !ok {
					continue // the head left meanwhile: re-read
				}
				cur = c
				wake, err = s.Watch(ctx, h, snap)
				if err != nil {
					return
				}
			} else if dw, ok := s.(DirWatcher); ok {
				wake, err = dw.WatchDir(ctx, e.r.dir, snap)
			} else {
				err = errors.New("engine cannot watch an empty election")
			}
			if err != nil {
				return
			}
			if first || cur != last {
				select {
				case out <- cur:
				case <-ctx.Done():
					return
				}
				last, first = cur, false
			}
			select {
			case <-wake:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, nil
}

// DefaultDrainTimeout bounds ResignPlan.Drain when its DrainTimeout is 0,
// so a stuck task cannot keep a resigning leader (and its successor)
// waiting forever: unfinished work is taken over through its lease and
// epoch instead.
const DefaultDrainTimeout = 10 * time.Second

// ResignPlan is the orderly hand-over of seed 2.4.5.8, in its order: stop
// taking work, drain in-flight work with a bound, checkpoint, then release
// leadership. Releasing first would let a new leader dispatch while this
// one still does.
type ResignPlan struct {
	// Drain waits for in-flight work to finish; its context ends after
	// DrainTimeout. Nil skips draining.
	Drain        func(ctx context.Context) error
	DrainTimeout time.Duration // 0 means DefaultDrainTimeout
	// Checkpoint saves progress for the next leader, fenced by the epoch.
	// Nil skips it.
	Checkpoint func(ctx context.Context, epoch uint64) error
}

// Leader is a won election.
type Leader struct {
	lease *baton.Lease
	id    string

	mu        sync.Mutex
	resigning bool
}

// Lease returns the leadership lease.
func (ld *Leader) Lease() *baton.Lease { return ld.lease }

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
	return !r && ld.lease.State() == baton.Held
}

// Admit blocks while the leader is suspended and returns nil once it may
// take new work. It returns an error wrapping baton.ErrLost when
// leadership is lost, baton.ErrResigning once Resign began, or ctx's error.
func (ld *Leader) Admit(ctx context.Context) error {
	for {
		ld.mu.Lock()
		r := ld.resigning
		ld.mu.Unlock()
		if r {
			return baton.ErrResigning
		}
		st, changed := ld.lease.Observe()
		switch st {
		case baton.Held:
			return nil
		case baton.Lost, baton.Released:
			if err := ld.lease.Err(); err != nil {
				return err
			}
			return baton.ErrLost
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Resign hands leadership over in order: Admit starts failing with
// baton.ErrResigning at once, then Drain runs (bounded), then Checkpoint,
// then leadership is released. Errors from the steps are returned joined;
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
