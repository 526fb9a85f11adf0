package etcdlock

import (
	"context"
	"slices"

	"github.com/baton-go/baton/engine/queuekit"
	clientv3 "go.etcd.io/etcd/client/v3"
)

var _ queuekit.PredecessorLister = (*session)(nil)

// ListBefore reads own and the n newest entries of dir created before it
// (queuekit.PredecessorLister): one range capped at own's create revision,
// newest first, limit n+1, as concurrency.Mutex's waitDeletes reads. The
// answer holds n+1 keys however long the queue is, so a waiter woken in a
// queue of thousands decodes one key, not thousands. Own is first in the
// answer while it lives (nothing else has its create revision), so a read
// without it finds the lease gone, as List does (etcd #11456). The first
// ListBefore after Enqueue returns the window Enqueue read.
func (s *session) ListBefore(ctx context.Context, dir string, own queuekit.Entry, n int) (queuekit.Snapshot, error) {
	snap, ok := s.takeFresh(dir, own)
	if !ok || (snap.Partial && n > 1) {
		if err := s.alive(); err != nil {
			return queuekit.Snapshot{}, err
		}
		ctx, cancel := s.bound(ctx)
		defer cancel()
		var err error
		snap, err = s.readBefore(ctx, dir, own, n, 0)
		if err != nil {
			if aerr := s.alive(); aerr != nil {
				return queuekit.Snapshot{}, aerr
			}
			return queuekit.Snapshot{}, opErr(ctx, "list", dir, err)
		}
	}
	return s.settle(dir, own, snap)
}

// readBefore reads own and the n newest entries of dir before it, at rev
// (serializable: the member has applied it) or, with rev 0, now
// (linearizable, as List reads).
func (s *session) readBefore(ctx context.Context, dir string, own queuekit.Entry, n int, rev int64) (queuekit.Snapshot, error) {
	opts := []clientv3.OpOption{clientv3.WithPrefix(), clientv3.WithMaxCreateRev(int64(own.Seq)),
		clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortDescend), clientv3.WithLimit(int64(n) + 1)}
	if rev != 0 {
		opts = append(opts, clientv3.WithRev(rev), clientv3.WithSerializable())
	}
	resp, err := s.c.cli.Get(ctx, dir+"/", opts...)
	if err != nil {
		return queuekit.Snapshot{}, err
	}
	if rev == 0 {
		rev = resp.Header.Revision
	}
	kvs := slices.Clone(resp.Kvs)
	slices.Reverse(kvs)
	snap := s.snapshot(dir, own, kvs, rev)
	snap.Partial = resp.More
	return snap, nil
}
