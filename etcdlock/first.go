package etcdlock

import (
	"context"

	"github.com/baton-go/baton/engine/queuekit"
	clientv3 "go.etcd.io/etcd/client/v3"
)

var _ queuekit.FirstReleaser = (*session)(nil)

// releasedKey is where a first holder's release leaves the ID of the entry
// it released: "<dir>\x00released". A lock name has no control
// characters, so the key is no lock's entry and lies outside every lock's
// "<dir>/" prefix, where etcdctl lock and concurrency.Mutex would take it
// for a contender.
func releasedKey(dir string) string { return dir + "\x00released" }

// ReleaseFirst deletes e, granted as the first entry of its directory with
// others behind it, and in the same guarded transaction puts e's grant ID
// at releasedKey, on this session's lease (queuekit.FirstReleaser).
func (s *session) ReleaseFirst(ctx context.Context, e queuekit.Entry) error {
	return s.delete(ctx, e, clientv3.OpPut(releasedKey(entryDir(e)), e.ID, clientv3.WithLease(s.id)))
}

// AfterFirst tells a waiter woken by the deletion of gone, the entry
// directly before own, whether gone was released as the first of its
// queue (queuekit.FirstReleaser): then own is first, since nothing is created
// with an earlier revision than an existing key's. It is one transaction
// of two compares, releasedKey holding gone's ID and own's key its create
// revision, where the read it replaces is a range that the server sorts
// whole (etcd applies a limit after sorting by create revision): at 2 000
// waiters, every key of the queue read from bbolt on every handoff.
// The token is own's create revision, as List gives it.
func (s *session) AfterFirst(ctx context.Context, dir string, own, gone queuekit.Entry) (queuekit.Snapshot, bool, error) {
	if gone.ID == "" || entryDir(gone) != dir || entryDir(own) != dir || own.Seq == 0 {
		return queuekit.Snapshot{}, false, nil
	}
	if err := s.alive(); err != nil {
		return queuekit.Snapshot{}, false, err
	}
	bctx, cancel := s.bound(ctx)
	defer cancel()
	resp, err := s.c.cli.Txn(bctx).If(
		clientv3.Compare(clientv3.Value(releasedKey(dir)), "=", gone.ID),
		guard(own, s.id),
	).Commit()
	if err != nil {
		if aerr := s.alive(); aerr != nil {
			return queuekit.Snapshot{}, false, aerr
		}
		return queuekit.Snapshot{}, false, opErr(ctx, "read", releasedKey(dir), err)
	}
	if !resp.Succeeded {
		return queuekit.Snapshot{}, false, nil
	}
	snap := queuekit.Snapshot{Own: 0, Entries: []queuekit.Entry{own}, Token: own.Seq, Rev: resp.Header.Revision}
	snap, err = s.settle(dir, own, snap)
	return snap, err == nil, err
}
