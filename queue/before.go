package queue

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
