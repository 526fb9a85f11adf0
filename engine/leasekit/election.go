package leasekit

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/engine"
)

// Election is leader election on a lease: the leader holds the name's
// leader entry, every other candidate waits as a mutex waiter does (its
// intent listed by inspect), and candidates lead in the order the store
// serves them. Leadership is a lease on the keeper, like a lock: its
// context is cancelled when leadership is lost, and its token is the
// leadership's epoch, strictly greater than every earlier leader's. Commit
// work with the epoch so that a deposed leader's late writes are rejected
// (package fence, task tables). A lost leader is never leader again under
// that entry: campaign again for a new epoch.
//
// It implements baton.Elector; the store must implement Leaders.
type Election struct {
	e     *Engine
	name  string
	bound any // the store's per-lock state (Binder)
}

var _ baton.Elector = (*Election)(nil)

// Election returns the election called name. An invalid name fails with
// an error wrapping baton.ErrInvalidName.
func (e *Engine) Election(name string) (*Election, error) {
	n, err := engine.ValidateName(name)
	if err != nil {
		return nil, fmt.Errorf("%s: Election: %w", e.Pkg, err)
	}
	return &Election{e: e, name: n, bound: e.bind(n, KindLeader)}, nil
}

// Name returns the normalised election name.
func (el *Election) Name() string { return el.name }

// ObservePeriod is how often Observe reads the election when nothing
// wakes it: TTL/4, within [100ms, 1s]. A leader that dies is replaced
// within about a TTL, and nobody announces an expiry, so polling faster
// would only cost reads.
func (el *Election) ObservePeriod() time.Duration {
	return min(max(el.e.Opts.TTL/4, 100*time.Millisecond), time.Second)
}

// Campaign blocks until this candidate leads or ctx ends, with
// baton.DefaultID() as its ID. On ctx's end its intent is released.
func (el *Election) Campaign(ctx context.Context) (*baton.Leader, error) {
	return el.CampaignAs(ctx, baton.DefaultID())
}

// CampaignAs is Campaign with the candidate ID id, stored with the
// leadership for Leader and Observe.
func (el *Election) CampaignAs(ctx context.Context, id string) (*baton.Leader, error) {
	l, err := el.e.Acquire(ctx, nil, Request{Name: el.name, Kind: KindLeader, Wait: true, ID: id, Bound: el.bound})
	if err != nil {
		return nil, err
	}
	return engine.NewLeader(l, id), nil
}

// Leader returns the current leader as the server sees it now, or an
// error wrapping baton.ErrNoLeader.
func (el *Election) Leader(ctx context.Context) (baton.Candidate, error) {
	if err := el.e.Err(); err != nil {
		return baton.Candidate{}, err
	}
	if p, ok := el.e.Store.(Preparer); ok {
		if err := p.Prepare(ctx); err != nil {
			return baton.Candidate{}, err
		}
	}
	ls, ok := el.e.Store.(Leaders)
	if !ok {
		return baton.Candidate{}, fmt.Errorf("%s: election %q: the engine cannot read a leader", el.e.Pkg, el.name)
	}
	return ls.Leader(ctx, el.name)
}

// Observe sends the leader (an empty Candidate while there is none), then
// each change, until ctx ends, the client closes, or the server stays
// unreadable for a TTL; then it closes the channel. It reads again every
// ObservePeriod, and at once when the store's wake-up source reports a
// release or a grant of the name. The goroutine it starts is owned by ctx
// (and the client).
func (el *Election) Observe(ctx context.Context) (<-chan baton.Candidate, error) {
	if err := el.e.Err(); err != nil {
		return nil, err
	}
	if p, ok := el.e.Store.(Preparer); ok {
		if err := p.Prepare(ctx); err != nil {
			return nil, err
		}
	}
	out := make(chan baton.Candidate)
	go el.observe(ctx, out)
	return out, nil
}

// observe is Observe's goroutine.
func (el *Election) observe(ctx context.Context, out chan<- baton.Candidate) {
	defer close(out)
	var (
		last   baton.Candidate
		first  = true
		lastOK = time.Now()
	)
	for {
		woke, unwatch := el.watch()
		cur, err := el.Leader(ctx)
		switch {
		case err == nil || errors.Is(err, baton.ErrNoLeader):
			lastOK = time.Now()
			if first || cur != last {
				if !el.send(ctx, out, cur) {
					unwatch()
					return
				}
				last, first = cur, false
			}
		case ctx.Err() != nil || el.e.Err() != nil || time.Since(lastOK) >= el.e.Opts.TTL:
			unwatch()
			return
		}
		t := time.NewTimer(el.ObservePeriod())
		select {
		case <-ctx.Done():
		case <-el.e.Ctx.Done():
		case <-woke:
		case <-t.C:
		}
		t.Stop()
		unwatch()
		if ctx.Err() != nil || el.e.Err() != nil {
			return
		}
	}
}

// watch watches the name on the store's wake-up source, if it has one.
func (el *Election) watch() (<-chan struct{}, func()) {
	if w, ok := el.e.Store.(Watcher); ok {
		return w.Watch(el.name)
	}
	return nil, func() {}
}

// send delivers c unless ctx ends or the client closes first.
func (el *Election) send(ctx context.Context, out chan<- baton.Candidate, c baton.Candidate) bool {
	select {
	case out <- c:
		return true
	case <-ctx.Done():
	case <-el.e.Ctx.Done():
	}
	return false
}
