package queuekit

import (
	"context"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/engine/queuekit/drillhook"
)

// PermitSession is implemented by sessions that run the semaphore without
// Curator's guard mutex: the permits are the first N lease entries by
// order, so an uncontended acquire+release is two requests (a create that
// counts the entries, a delete) instead of four. etcd's session does (etcd
// has no Curator to interoperate with); ZooKeeper's keeps
// InterProcessSemaphoreV2.
//
// Holders release in any order, so a waiter cannot just watch the entry N
// places before it: a release between that entry and the waiter would
// leave a free permit unseen. Instead only the first waiter in line (N
// entries before it) watches the entries before it, and wakes at any
// deletion among them; every later waiter watches its predecessor, which is
// also a waiter, and wakes when it goes or when it is granted (Pass): then
// the later waiter is first in line. A release thus wakes one waiter, and a
// grant of an entry that was not among the first N at its create wakes
// one more.
type PermitSession interface {
	PredecessorLister
	// EnqueuePermit creates this session's lease entry in dir storing data
	// (as DataSession's EnqueueData). When the create itself shows fewer
	// than n entries before it, snap holds the entry alone, granted (Own 0,
	// Token set); otherwise snap.Own is -1 and the caller reads with
	// ListBefore.
	EnqueuePermit(ctx context.Context, dir string, n int, data []byte) (e Entry, snap Snapshot, err error)
	// WatchTurn returns a channel closed once the waiter e, whose last read
	// was snap (at least n entries before e), should read again: when snap
	// holds all entries before e (not Partial) and they are n, at the
	// deletion of any of them; otherwise (more than n) at any change of
	// e's predecessor (deleted, or touched by Pass). It also closes when e
	// is gone, the session ends or ctx ends.
	WatchTurn(ctx context.Context, e Entry, snap Snapshot, n int) (<-chan struct{}, error)
	// Pass wakes the waiter that may be watching e as its predecessor, now
	// that e is granted: that waiter is first in line.
	Pass(ctx context.Context, e Entry) error
}

// readTurn reads e and the entries before it until it knows e's turn: a
// window of n+1 entries, wider while it shows at most n entries but older
// ones may exist (keys that are not entries can fill a window). Then
// either all entries before e are known, or more than n are, and e's
// predecessor is a waiter too.
func (s *Semaphore) readTurn(ctx context.Context, ps PermitSession, e Entry) (Snapshot, error) {
	for w := s.n + 1; ; w *= 8 {
		snap, err := ps.ListBefore(ctx, s.leases.dir, e, w)
		if err != nil || snap.Own < 0 || !snap.Partial || snap.Own > s.n {
			return snap, err
		}
	}
}

// firstN is the acquire of a permit on a PermitSession: recipe.run's loop
// with the enqueue that may grant at once, WatchTurn for the wait, and a
// Pass after a grant that a waiter behind may be watching for.
func (s *Semaphore) firstN(ctx context.Context, sess Session, ps PermitSession, wait bool, t *track) (*baton.Lease, error) {
	r := &s.leases
	hooks := drillhook.From(ctx)
	e, snap, err := ps.EnqueuePermit(ctx, r.dir, s.n, r.data)
	if err != nil {
		r.b.Done(sess, r.dir)
		return nil, r.errf("%w", err)
	}
	fail := func(err error) (*baton.Lease, error) {
		sess.Abandon(e)
		r.b.Done(sess, r.dir)
		return nil, err
	}
	// A waiter behind e watches e as its predecessor if it ever read e
	// among the waiters; e's place only moves forward, so that is possible
	// unless the create itself found e among the first n. Then e's grant
	// must wake it (Pass), even a grant at e's first read.
	pass := snap.Own < 0
	for {
		if snap.Own < 0 {
			if snap, err = s.readTurn(ctx, ps, e); err != nil {
				return fail(r.ctxErr(ctx, sess, err))
			}
			if snap.Own < 0 {
				return fail(r.errf("%w", baton.ErrSessionLost))
			}
		}
		if snap.Own < s.n {
			if pass {
				// Best effort: if the successor misses it, it wakes at
				// this permit's release instead.
				_ = ps.Pass(ctx, e)
			}
			l, err := r.grant(ctx, sess, e, snap, hooks, t)
			if err == nil && snap.Own > 0 {
				// Leases are held beside this one: judge their N too, so
				// that a client whose larger N lets it in is told.
				s.check(ctx, sess, snap)
			}
			return l, err
		}
		s.check(ctx, sess, snap)
		if !wait {
			if derr := sess.Delete(ctx, e); derr == nil {
				r.b.Done(sess, r.dir)
				return nil, r.errf("%w", baton.ErrNotAcquired)
			}
			return fail(r.errf("%w", baton.ErrNotAcquired))
		}
		t.Retry(ctx, snap.ahead(), nil)
		if hooks != nil && hooks.BeforeWatch != nil {
			hooks.BeforeWatch(snap.Entries[snap.Own-1].Key)
		}
		gone, err := ps.WatchTurn(ctx, e, snap, s.n)
		if err != nil {
			return fail(r.ctxErr(ctx, sess, err))
		}
		if err := r.await(ctx, sess, gone); err != nil {
			return fail(err)
		}
		snap = Snapshot{Own: -1}
	}
}
