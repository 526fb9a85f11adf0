package queuekit

import (
	"context"
	"errors"
	"fmt"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/engine"
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
// uses baton.DefaultID ("<hostname>:<pid>"); CampaignAs sets another.
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
	n, err := engine.ValidateName(name)
	if err != nil {
		return nil, err
	}
	e := &Election{r: recipe{b: b, name: n, dir: n, kind: KindLatch, rule: first, before: true}}
	e.r.observe(opts, "election")
	return e, nil
}

// Name returns the normalised election name.
func (e *Election) Name() string { return e.r.name }

// Campaign blocks until this candidate leads or ctx ends, with
// baton.DefaultID as its ID. On ctx's end its candidacy is withdrawn by the
// session's cleanup.
func (e *Election) Campaign(ctx context.Context) (*baton.Leader, error) {
	return e.CampaignAs(ctx, baton.DefaultID())
}

// CampaignAs is Campaign with the candidate ID id (etcdctl elect's
// proposal; Curator LeaderLatch's id).
func (e *Election) CampaignAs(ctx context.Context, id string) (*baton.Leader, error) {
	r := e.r
	r.data = []byte(id)
	l, err := r.acquire(ctx, true)
	if err != nil {
		return nil, err
	}
	return engine.NewLeader(l, id), nil
}

// Leader returns the current leader, or an error wrapping baton.ErrNoLeader.
func (e *Election) Leader(ctx context.Context) (baton.Candidate, error) {
	s, err := e.r.b.Session(ctx, e.r.dir)
	if err != nil {
		return baton.Candidate{}, err
	}
	defer e.r.b.Done(s, e.r.dir)
	for {
		snap, err := s.List(ctx, e.r.dir, Entry{})
		if err != nil {
			return baton.Candidate{}, err
		}
		if len(snap.Entries) == 0 {
			return baton.Candidate{}, fmt.Errorf("election %q: %w", e.r.name, baton.ErrNoLeader)
		}
		c, ok, err := describe(ctx, s, snap.Entries[0])
		if err != nil {
			return baton.Candidate{}, err
		}
		if ok {
			return c, nil
		}
		// The head left between the read and its ID's read: look again.
	}
}

// describe builds the Candidate of entry h, reading its ID where the
// engine stores one; ok is false when h is already gone.
func describe(ctx context.Context, s Session, h Entry) (baton.Candidate, bool, error) {
	c := baton.Candidate{Entry: h.Key, Session: h.Owner}
	ds, ok := s.(DataSession)
	if !ok {
		return c, true, nil
	}
	// Every entry of an election is a candidate, whatever kind its value
	// suggests (an etcdctl proposal may look like anything).
	h.Kind = KindLatch
	data, ok, err := ds.Data(ctx, h)
	if err != nil || !ok {
		return baton.Candidate{}, ok, err
	}
	c.ID = string(data)
	return c, true, nil
}

// Observe sends the leader each time it changes (an empty Candidate while
// there is none) until ctx ends or the observing session fails; then it
// closes the channel. The goroutine it starts is owned by ctx.
func (e *Election) Observe(ctx context.Context) (<-chan baton.Candidate, error) {
	s, err := e.r.b.Session(ctx, e.r.dir)
	if err != nil {
		return nil, err
	}
	out := make(chan baton.Candidate)
	go func() {
		defer close(out)
		defer e.r.b.Done(s, e.r.dir)
		last, first := baton.Candidate{}, true
		for ctx.Err() == nil {
			snap, err := s.List(ctx, e.r.dir, Entry{})
			if err != nil {
				return
			}
			var cur baton.Candidate
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

var _ baton.Elector = (*Election)(nil)
