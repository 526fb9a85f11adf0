package queuekit

import (
	"context"
	"errors"
	"fmt"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/clock"
	"github.com/baton-go/baton/engine"
	"github.com/baton-go/baton/engine/queuekit/drillhook"
)

// rule decides eligibility from a sorted snapshot: ok when the reader's own
// entry is granted, else the index of the one entry it must wait for, or -1
// to wait for any change of the directory.
type rule func(s Snapshot) (blocker int, ok bool)

// recipe is the acquire loop every queue recipe shares.
type recipe struct {
	b    Backend
	name string // normalised lock name
	dir  string // directory handed to the backend
	kind Kind
	rule rule
	key  any // reentrancy identity; nil disables reentrancy
	// handOff makes a failed release hand the entry to the session's
	// cleanup and report success: for short internal guards, whose caller
	// cannot retry and whose entry must not block others for a whole
	// session.
	handOff bool
	// data is stored with the entry where the session supports it
	// (DataSession); nil stores nothing.
	data []byte
	// beforeWait, if set, runs each time the rule refuses the entry (before
	// a TryLock gives up or the wait's watch is set): the semaphore checks
	// the other leases' N there, off the uncontended path.
	beforeWait func(ctx context.Context, s Session, snap Snapshot)
	// outer is a second reentrancy identity tried before key: the write
	// side's, on the read side, so that a writer may read.
	outer any
	// before marks a rule that looks only at the entries before the own
	// one, so a PredecessorLister may serve it (see list).
	before bool

	// obs, if set, is told of each acquire (see track); clk times its
	// events; label is Event.Recipe.
	obs   baton.Observer
	clk   clock.Clock
	label string
}

// observe configures r's events from opts.
func (r *recipe) observe(opts MutexOptions, label string) {
	r.obs, r.clk, r.label = opts.Observer, opts.Clock, label
}

// acquire enqueues and waits until rule grants the entry. wait=false makes
// one attempt (TryLock). With an Observer it reports the acquire's start,
// each wait and its outcome.
func (r *recipe) acquire(ctx context.Context, wait bool) (*baton.Lease, error) {
	if r.obs == nil {
		return r.run(ctx, wait, nil)
	}
	t, ctx := r.begin(ctx)
	l, err := r.run(ctx, wait, t)
	t.End(ctx, l, err)
	return l, err
}

// reenter returns the lease of this lock ctx already holds, with one more
// hold (see engine.Reenter).
func (r *recipe) reenter(ctx context.Context) (*baton.Lease, error) {
	if r.outer != nil {
		if l, err := engine.Reenter(ctx, r.outer); l != nil || err != nil {
			return l, err
		}
	}
	return engine.Reenter(ctx, r.key)
}

// run is acquire's loop; t is nil when the acquire is not observed.
func (r *recipe) run(ctx context.Context, wait bool, t *track) (*baton.Lease, error) {
	if l, err := r.reenter(ctx); l != nil || err != nil {
		if l != nil {
			t.Reentered()
		}
		return l, err
	}
	if err := ctx.Err(); err != nil {
		return nil, r.errf("%w", err)
	}
	hooks := drillhook.From(ctx)
	s, err := r.b.Session(ctx, r.dir)
	if err != nil {
		return nil, r.errf("%w", err)
	}
	var e Entry
	if ds, ok := s.(DataSession); ok && r.data != nil {
		e, err = ds.EnqueueData(ctx, r.dir, r.kind, r.data)
	} else {
		e, err = s.Enqueue(ctx, r.dir, r.kind)
	}
	if err != nil {
		r.b.Done(s, r.dir)
		return nil, r.errf("%w", err)
	}
	fail := func(err error) (*baton.Lease, error) {
		// The entry belongs to the session: its cleanup removes it even when
		// this call has to return now (CURATOR-79).
		s.Abandon(e)
		r.b.Done(s, r.dir)
		return nil, err
	}
	var pred Entry // the entry waited for, when it was e's direct predecessor
	for {
		snap, err := r.relist(ctx, s, e, pred)
		if err != nil {
			return fail(r.ctxErr(ctx, s, err))
		}
		if snap.Own < 0 {
			// Our entry is gone: the session died or someone removed it.
			// Never re-create under the same call: the caller's queue
			// position is dead.
			return fail(r.errf("%w", baton.ErrSessionLost))
		}
		blocker, ok := r.rule(snap)
		if ok {
			return r.grant(ctx, s, e, snap, hooks, t)
		}
		if r.beforeWait != nil {
			r.beforeWait(ctx, s, snap)
		}
		if !wait {
			if derr := s.Delete(ctx, e); derr == nil {
				r.b.Done(s, r.dir)
				return nil, r.errf("%w", baton.ErrNotAcquired)
			}
			return fail(r.errf("%w", baton.ErrNotAcquired))
		}
		t.Retry(ctx, snap.ahead(), nil)
		var gone <-chan struct{}
		pred = Entry{}
		if blocker < 0 {
			// The rule waits for any change of the directory.
			dw, ok := s.(DirWatcher)
			if !ok {
				return fail(r.errf("engine %s cannot watch a directory", r.b.Engine()))
			}
			gone, err = dw.WatchDir(ctx, r.dir, snap)
		} else {
			be := snap.Entries[blocker]
			if blocker == snap.Own-1 {
				pred = be
			}
			if hooks != nil && hooks.BeforeWatch != nil {
				hooks.BeforeWatch(be.Key)
			}
			gone, err = s.Watch(ctx, be, snap)
		}
		if err != nil {
			return fail(r.ctxErr(ctx, s, err))
		}
		if err := r.await(ctx, s, gone); err != nil {
			return fail(err)
		}
	}
}

// await blocks until the blocker is gone, the session is lost, or ctx ends.
// A suspension alone does not end the wait: the server keeps the entry for
// as long as the session may come back.
func (r *recipe) await(ctx context.Context, s Session, gone <-chan struct{}) error {
	for {
		st, changed := s.Observe()
		if st == baton.Lost {
			return r.errf("%w", baton.ErrSessionLost)
		}
		select {
		case <-gone:
			// The watch also closes when the session ends: a dead session's
			// waiter fails here instead of re-reading on a dead connection.
			if st, _ := s.Observe(); st == baton.Lost {
				return r.errf("%w", baton.ErrSessionLost)
			}
			return nil
		case <-changed:
		case <-ctx.Done():
			return r.ctxErr(ctx, s, nil)
		}
	}
}

// grant turns a granted entry into a lease, unless the acquire context
// ended in the meantime: then the grant is given back, not leaked. hooks
// are the acquire's drill hooks (nil outside drills).
func (r *recipe) grant(ctx context.Context, s Session, e Entry, snap Snapshot, hooks *drillhook.Hooks, t *track) (*baton.Lease, error) {
	if hooks != nil && hooks.BeforeReturn != nil {
		hooks.BeforeReturn()
	}
	if err := ctx.Err(); err != nil {
		s.Abandon(e)
		r.b.Done(s, r.dir)
		return nil, r.errf("%w", err)
	}
	h := &held{r: r, s: s, e: e, first: r.releasesFirst(s, snap)}
	g := engine.Grant{
		Name:    r.name,
		Engine:  r.b.Engine(),
		Token:   snap.Token,
		Owner:   e.id(),
		Key:     r.key,
		Release: h.release,
		// OnEnd cannot run before follow below: until then neither the
		// holder nor the follower has the lease.
		OnEnd: h.end,
	}
	if t != nil {
		t.Grant(&g, s.ID())
	}
	l, ctl := engine.NewLease(ctx, g)
	h.ctl = ctl
	follow(s, ctl)
	return l, nil
}

// held is a granted entry as its lease's Release and OnEnd see it: one
// allocation for both.
type held struct {
	r     *recipe
	s     Session
	e     Entry
	ctl   engine.Control // set before the lease can end (see grant)
	first bool           // release with ReleaseFirst (see releasesFirst)
}

// release deletes the entry. When the delete fails the entry goes to the
// session's cleanup, after the lease ended (baton.Lease.Release); a
// guard's (handOff) failure is not its caller's to see.
func (h *held) release(ctx context.Context) error {
	var err error
	if h.first {
		err = h.s.(FirstReleaser).ReleaseFirst(ctx, h.e)
	} else {
		err = h.s.Delete(ctx, h.e)
	}
	switch {
	case err == nil:
		return nil
	case h.r.handOff:
		h.s.Abandon(h.e)
		return nil
	}
	h.ctl.ReleaseFailed(err) // before the cleanup can let anyone in
	h.s.Abandon(h.e)
	return err
}

// end unregisters the ended lease from its session's follower and tells
// the backend the entry is gone.
func (h *held) end() {
	leave(h.s, h.ctl)
	h.r.b.Done(h.s, h.r.dir)
}

// ctxErr builds the error for a wait that ended: the context's error,
// marked ErrUnavailable when the session was in doubt at the time, or the
// operational error.
func (r *recipe) ctxErr(ctx context.Context, s Session, err error) error {
	st, _ := s.Observe()
	if st == baton.Lost {
		return r.errf("%w", baton.ErrSessionLost)
	}
	if cerr := ctx.Err(); cerr != nil {
		if st == baton.Suspended {
			return r.errf("%w: %w", baton.ErrUnavailable, cerr)
		}
		return r.errf("%w", cerr)
	}
	if err == nil {
		err = errors.New("wait ended")
	}
	return r.errf("%w", err)
}

func (r *recipe) errf(format string, args ...any) error {
	return fmt.Errorf("baton: acquire %q: "+format, append([]any{r.name}, args...)...)
}
