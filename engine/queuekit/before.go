package queuekit

import "context"

// PredecessorLister is implemented by sessions that can read only the
// newest entries created before a given entry. etcd reads them in one
// request whose answer does not grow with the queue (a range capped at the
// entry's create revision, newest first, with a limit: what
// concurrency.Mutex's waitDeletes reads). ZooKeeper keeps Curator's one
// getChildren, whose answer does grow, but builds entries only for the
// window it returns.
//
// The acquire loop uses it for rules that look only at the entries before
// the caller's own (the mutex, both sides of the RW lock, the election, the
// semaphore's guard): entries behind a waiter never change its answer, and
// the ones before it can only leave, never arrive. A woken waiter of a long
// queue then reads its blocker alone instead of the whole directory.
type PredecessorLister interface {
	// ListBefore reads own and the n newest entries of dir created before
	// it (more where the session read them anyway and a wider window
	// would cost another read: ZooKeeper's reader). Entries holds them
	// sorted with own last; Own is -1 when own is gone. Partial is set when
	// older entries may exist beyond those returned. Token and Rev are set
	// as by List.
	ListBefore(ctx context.Context, dir string, own Entry, n int) (Snapshot, error)
}

// list reads the directory as r's rule needs it: with a PredecessorLister
// and a rule that looks only before the own entry, the newest entry
// before it first, then wider windows while the window read would grant
// but older entries may still block (a reader behind readers looks further
// back for a writer). A blocker found in a window is the rule's blocker
// on the whole queue, since the rules scan back from the own entry.
func (r *recipe) list(ctx context.Context, s Session, own Entry) (Snapshot, error) {
	pl, ok := s.(PredecessorLister)
	if !ok || !r.before {
		return s.List(ctx, r.dir, own)
	}
	for n := 1; ; n *= 8 {
		snap, err := pl.ListBefore(ctx, r.dir, own, n)
		if err != nil || snap.Own < 0 || !snap.Partial {
			return snap, err
		}
		if _, ok := r.rule(snap); !ok {
			return snap, nil
		}
	}
}

// ahead is the number of entries before the own one, as Event.Position
// reports it: -1 when only a window of the queue was read and the engine
// did not count the rest.
func (s Snapshot) ahead() int {
	switch {
	case !s.Partial:
		return s.Own
	case s.Ahead > 0:
		return s.Ahead
	}
	return -1
}

// FirstReleaser is implemented by sessions that let a woken waiter skip
// the read of a long queue. An entry granted as the first of its queue has
// nothing before it, and nothing can be created before it later; when it
// is released, the waiter directly behind it is first. ReleaseFirst
// records, in the same write as the delete, that the released entry was
// such a first; AfterFirst, in one read whose answer does not grow with
// the queue, tells the waiter behind it that this was so.
//
// Without it, or when the entry that left was not released by a first
// holder (a waiter that gave up, a session that died, another library's
// client), the waiter reads the queue as usual.
type FirstReleaser interface {
	// ReleaseFirst deletes e, granted as the first entry of its queue. Like
	// Delete it returns nil if e is already gone.
	ReleaseFirst(ctx context.Context, e Entry) error
	// AfterFirst reports whether gone, the entry directly before own in
	// dir at the caller's last read, was deleted by ReleaseFirst. If so it
	// returns the snapshot that read would give: own alone and first, with
	// its Token. ok is false when it cannot tell.
	AfterFirst(ctx context.Context, dir string, own, gone Entry) (snap Snapshot, ok bool, err error)
}

// relist reads the directory after a wait on gone. gone is the zero Entry
// unless it was own's direct predecessor at the last read; then a
// FirstReleaser may answer in one small read (see FirstReleaser).
func (r *recipe) relist(ctx context.Context, s Session, own, gone Entry) (Snapshot, error) {
	if fr, ok := s.(FirstReleaser); ok && gone.Key != "" {
		snap, ok, err := fr.AfterFirst(ctx, r.dir, own, gone)
		if err != nil || ok {
			return snap, err
		}
	}
	return r.list(ctx, s, own)
}

// releasesFirst reports whether a lease of r granted by snap deletes its
// entry with ReleaseFirst: when the entry was first and may have had a
// waiter behind it that can skip a read. Only the waiters of a rule that
// looks before the own entry watch their direct predecessor and relist; a
// semaphore's lease waiters watch the directory or their own turn, and a
// mark would only cost its release (and on etcd leave a key under the
// semaphore's name).
func (r *recipe) releasesFirst(s Session, snap Snapshot) bool {
	_, ok := s.(FirstReleaser)
	return ok && r.before && snap.Own == 0 && !snap.Alone
}
