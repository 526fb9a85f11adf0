package etcdlock

import (
	"context"

	"github.com/baton-go/baton/engine/queuekit"
	clientv3 "go.etcd.io/etcd/client/v3"
)

var _ queuekit.PermitSession = (*session)(nil)

// EnqueuePermit creates this lease's semaphore entry "<dir>/<lease hex>"
// (value "lease-baton:permits=<N>") with Enqueue's transaction
// (queuekit.PermitSession). The transaction counts the keys under dir: when
// they are at most n, ours included, fewer than n entries are before ours
// and the permit is granted without a read, so an uncontended
// acquire+release is two requests, the create and the delete. (The
// count also holds keys that are not entries, such as a nested lock's: it
// can only overstate the queue, and a larger count means a read.) When
// other keys are there, a grant reads them (serializable, at the create's
// revision: see othersAt) so that the semaphore can judge their N.
func (s *session) EnqueuePermit(ctx context.Context, dir string, n int, data []byte) (queuekit.Entry, queuekit.Snapshot, error) {
	e, count, err := s.create(ctx, dir, queuekit.KindLease, data)
	if err != nil {
		return queuekit.Entry{}, queuekit.Snapshot{}, err
	}
	if count < 1 || count > int64(n) {
		return e, queuekit.Snapshot{Own: -1}, nil
	}
	snap := (&fresh{e: e}).alone(int64(e.Seq))
	if count > 1 {
		snap = s.othersAt(ctx, dir, e, int(count-1), snap)
	}
	snap, err = s.settle(dir, e, snap)
	if err != nil {
		// The entry exists: the caller's cleanup needs it.
		return e, queuekit.Snapshot{Own: -1}, nil
	}
	return e, snap, nil
}

// othersAt reads the entries before e, granted at its create beside at
// most others other keys, and keeps their data for Data: the semaphore
// judges the N of the leases beside a grant, so that a client whose larger
// N lets it in past leases taken with a smaller one is told, not only the
// client that must wait (queuekit.Semaphore, "N must agree"). It costs one
// serializable range at the create's revision, on a contended grant only.
// If the read fails, the grant stands on the count alone (alone).
func (s *session) othersAt(ctx context.Context, dir string, e queuekit.Entry, others int, alone queuekit.Snapshot) queuekit.Snapshot {
	rctx, cancel := s.bound(ctx)
	defer cancel()
	resp, err := s.c.cli.Get(rctx, dir+"/", clientv3.WithPrefix(), clientv3.WithMaxCreateRev(int64(e.Seq)),
		clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend), clientv3.WithLimit(int64(others)+1),
		clientv3.WithRev(int64(e.Seq)), clientv3.WithSerializable())
	if err != nil {
		return alone
	}
	snap := s.snapshot(dir, e, resp.Kvs, int64(e.Seq))
	if snap.Own < 0 {
		return alone
	}
	vals := make(map[string][]byte, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		v := kv.Value
		vals[grantID(string(kv.Key), kv.CreateRevision)] = entryData(valueKind(v), v)
	}
	s.mu.Lock()
	s.fresh[dir] = &fresh{e: e, snap: snap, data: vals}
	s.mu.Unlock()
	return snap
}

// WatchTurn watches, from the revision after snap's read, what can end e's
// wait for a permit (queuekit.PermitSession): when snap holds exactly n
// entries before e, e is first in line and wakes at any deletion under
// dir (one prefix watch, puts filtered out; a deletion behind e wakes it
// for nothing, but only e, and only to read n+1 keys); otherwise it
// watches its predecessor, a waiter too, for any event (its deletion, or
// the touch of Pass when it is granted), and its own key for deletion, as
// Watch does (etcd #19597). A compaction, a cancelled watch, the session's
// end or ctx's end close the channel too: the caller reads again.
func (s *session) WatchTurn(ctx context.Context, e queuekit.Entry, snap queuekit.Snapshot, n int) (<-chan struct{}, error) {
	if err := s.alive(); err != nil {
		return nil, err
	}
	wctx, cancel := s.bound(ctx)
	from := clientv3.WithRev(snap.Rev + 1)
	var a, b clientv3.WatchChan
	if !snap.Partial && snap.Own == n {
		a = s.c.cli.Watch(wctx, entryDir(e)+"/", clientv3.WithPrefix(), from, clientv3.WithFilterPut())
	} else {
		a = s.c.cli.Watch(wctx, snap.Entries[snap.Own-1].Key, from)
		b = s.c.cli.Watch(wctx, e.Key, from, clientv3.WithFilterPut())
	}
	woken := make(chan struct{})
	ok := s.spawn(func() {
		defer close(woken)
		defer cancel()
		for {
			var wr clientv3.WatchResponse
			var open bool
			select {
			case wr, open = <-a:
			case wr, open = <-b:
			case <-s.done:
				return
			case <-ctx.Done():
				return
			}
			if !open || wr.Canceled || wr.CompactRevision != 0 || wr.Err() != nil || len(wr.Events) > 0 {
				return
			}
		}
	})
	if !ok {
		cancel()
		return nil, s.alive()
	}
	return woken, nil
}

// Pass touches e's key (queuekit.PermitSession): a put that keeps its value,
// lease and create revision, so e's order and token are unchanged, and the
// waiter watching e as its predecessor wakes to find itself first in line.
// It is guarded by e's create revision (a later grant on the same key is
// never touched) and bounded like one attempt of Delete.
func (s *session) Pass(ctx context.Context, e queuekit.Entry) error {
	ctx, cancel := context.WithTimeout(ctx, s.deleteTimeout())
	defer cancel()
	_, err := s.c.cli.Txn(ctx).If(guard(e, s.id)).
		Then(clientv3.OpPut(e.Key, "", clientv3.WithIgnoreValue(), clientv3.WithIgnoreLease())).Commit()
	if err != nil {
		return opErr(ctx, "pass", e.Key, err)
	}
	return nil
}
