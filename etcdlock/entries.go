package etcdlock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/engine"
	"github.com/baton-go/baton/engine/queuekit"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Enqueue creates this lease's entry "<dir>/<lease hex>" in one
// transaction that also counts the keys under the directory. When ours is
// the only one the queue is known without reading it, so an uncontended
// acquire costs a single round trip (as concurrency.Mutex's does); when
// there are others, a second request reads, at the transaction's revision
// (the snapshot the transaction would have read), the entry just before
// ours: all a waiter of the mutex, the RW lock or the election needs to
// know whom to watch (see ListBefore).
//
// The transaction does not read the queue itself: a write transaction is
// applied in the server's single apply loop, and reading n entries there
// (bbolt reads and decoding of every key) makes n waiters cost O(n²) of
// serialized apply time. With 500 waiters under -race that held the apply
// loop for many seconds, and everything that waits for it stalled: lease
// keepalives ("waiting for the applied index took too long", so leases
// were lost) and linearizable reads. A count walks only the in-memory
// index; the read of a contended queue runs as an ordinary range, beside
// the apply loop, and it is serializable: a revision this member has
// applied needs no consensus round. If the transaction's
// outcome is unknown (an error after the request may have been sent), the
// key is read back: its name is deterministic, so our key on our lease
// means it was applied. When it cannot be resolved the lease is never
// reused and the key is handed to the cleanup.
func (s *session) Enqueue(ctx context.Context, dir string, kind queuekit.Kind) (queuekit.Entry, error) {
	return s.EnqueueData(ctx, dir, kind, nil)
}

// EnqueueData is Enqueue storing data in the key's value after the kind's
// marker and before the holder record (see entryValue; queuekit.DataSession).
func (s *session) EnqueueData(ctx context.Context, dir string, kind queuekit.Kind, data []byte) (queuekit.Entry, error) {
	e, count, err := s.create(ctx, dir, kind, data)
	if err != nil || count < 0 {
		return e, err
	}
	rev := int64(e.Seq) // a transaction's put is created at its revision
	f := &fresh{e: e}
	snap := f.alone(rev)
	if count != 1 {
		// Others queue here: read the entry just before ours (see
		// ListBefore) as the transaction saw the queue. A read at a
		// revision the member has applied needs no consensus round
		// (serializable). If it fails (another member, not yet at rev;
		// compacted), the first List reads the queue afresh.
		rctx, cancel := s.bound(ctx)
		snap, err = s.readBefore(rctx, dir, e, 1, rev)
		cancel()
		if err != nil {
			return e, nil
		}
	}
	f.snap = snap
	s.mu.Lock()
	s.fresh[dir] = f
	s.mu.Unlock()
	return e, nil
}

// create runs Enqueue's transaction. count is the number of keys under dir
// at its revision, ours included, or -1 when an earlier attempt's key was
// adopted (the count is then unknown).
func (s *session) create(ctx context.Context, dir string, kind queuekit.Kind, data []byte) (queuekit.Entry, int64, error) {
	if err := s.alive(); err != nil {
		return queuekit.Entry{}, 0, err
	}
	val := s.c.values.entryValue(kind, data)
	o := s.ops(dir, val)
	key := o.key
	// Bound by the session as every other request: on a partitioned
	// connection the answer never comes, and the caller's deadline may be
	// far away (a pooled session's lease can be lost while the create is
	// in flight).
	ctx, cancel := s.bound(ctx)
	defer cancel()
	r, err := s.c.cli.Do(ctx, clientv3.OpTxn(o.ifGone, o.create, o.orGet))
	resp := r.Txn()
	if err != nil {
		e, err := s.resolveEnqueue(ctx, dir, key, kind, val, err)
		return e, -1, err
	}
	if !resp.Succeeded {
		// Our key already exists. Only an earlier attempt of this very
		// enqueue can have made it (the pool never hands out a lease with
		// an entry or a pending cleanup in dir), so adopt it if it is ours.
		// The first List reads the queue.
		kvs := resp.Responses[0].GetResponseRange().GetKvs()
		if len(kvs) == 0 || kvs[0].Lease != int64(s.id) || string(kvs[0].Value) != val {
			s.taint(dir, queuekit.Entry{Key: key, Kind: kind, Owner: s.hex})
			return queuekit.Entry{}, 0, fmt.Errorf("etcdlock: enqueue %q: a foreign key with this lease's name exists", key)
		}
		seq := kvs[0].CreateRevision
		return queuekit.Entry{Key: key, Kind: kind, Seq: uint64(seq), Owner: s.hex, ID: grantID(key, seq)}, -1, nil
	}
	rev := resp.Header.Revision // a transaction's put is created at its revision
	e := queuekit.Entry{Key: key, Kind: kind, Seq: uint64(rev), Owner: s.hex, ID: grantID(key, rev)}
	s.mu.Lock()
	s.live[dir] = rev
	s.mu.Unlock()
	return e, resp.Responses[1].GetResponseRange().GetCount(), nil
}

// alone is the queue of f.e's directory at rev when f.e, created at rev,
// is the only key under it: built from the entry itself, as a read would
// have returned it, in f's own storage, so that an uncontended grant
// decodes and allocates nothing more.
func (f *fresh) alone(rev int64) queuekit.Snapshot {
	f.one[0] = f.e
	return queuekit.Snapshot{Entries: f.one[:], Own: 0, Token: f.e.Seq, Rev: rev, Alone: true}
}

// countOp counts the keys under dir: the in-memory index only, no values.
func countOp(dir string) clientv3.Op {
	return clientv3.OpGet(dir+"/", clientv3.WithPrefix(), clientv3.WithCountOnly())
}

// resolveEnqueue settles a create whose outcome is unknown.
func (s *session) resolveEnqueue(ctx context.Context, dir, key string, kind queuekit.Kind, val string, err error) (queuekit.Entry, error) {
	if errors.Is(err, rpctypes.ErrLeaseNotFound) {
		// The whole transaction failed: nothing was created.
		s.kickKeepalive()
		return queuekit.Entry{}, fmt.Errorf("etcdlock: enqueue %q: %w: %w", key, baton.ErrSessionLost, err)
	}
	if ctx.Err() == nil {
		resp, gerr := s.c.cli.Get(ctx, key)
		if gerr == nil {
			if kvs := resp.Kvs; len(kvs) == 1 && kvs[0].Lease == int64(s.id) && string(kvs[0].Value) == val {
				return queuekit.Entry{Key: key, Kind: kind, Seq: uint64(kvs[0].CreateRevision), Owner: s.hex, ID: grantID(key, kvs[0].CreateRevision)}, nil
			}
		}
	}
	// Absent or unknown. A request still in flight could apply later, so
	// this lease is never used for a new entry again; the cleanup deletes
	// the key if it appears, and the lease's revoke (when its other
	// entries are done) removes it for certain.
	s.taint(dir, queuekit.Entry{Key: key, Kind: kind, Owner: s.hex})
	if aerr := s.alive(); aerr != nil {
		return queuekit.Entry{}, aerr
	}
	return queuekit.Entry{}, opErr(ctx, "enqueue", key, err)
}

// taint retires s from the pool for new entries and hands e (Seq 0: exact
// revision unknown) to the cleanup.
func (s *session) taint(dir string, e queuekit.Entry) {
	s.retire()
	s.abandon(dir, e)
}

// snapshot builds a queuekit.Snapshot from a sorted range of dir. Keys that are
// not direct children "<dir>/<lease hex>" on a lease (see isEntry) are left
// out, so a lock named "a/b" does not mix into the queue of "a", and a
// foreign key such as "<dir>/-1", or "<dir>/1234abcd" put without a lease,
// never blocks the queue.
func (s *session) snapshot(dir string, own queuekit.Entry, kvs []*mvccpb.KeyValue, rev int64) queuekit.Snapshot {
	snap := queuekit.Snapshot{Own: -1, Rev: rev, Entries: make([]queuekit.Entry, 0, len(kvs))}
	pfx := dir + "/"
	for _, kv := range kvs {
		k := string(kv.Key)
		rest, ok := strings.CutPrefix(k, pfx)
		if !ok || rest == "" {
			continue
		}
		if !isEntry(rest, kv.Lease) {
			continue
		}
		e := queuekit.Entry{Key: k, Kind: valueKind(kv.Value), Seq: uint64(kv.CreateRevision), Owner: leaseHex(clientv3.LeaseID(kv.Lease)), ID: grantID(k, kv.CreateRevision)}
		if k == own.Key && e.Seq == own.Seq && kv.Lease == int64(s.id) {
			snap.Own = len(snap.Entries)
			snap.Token = e.Seq // the raw token: List adds the floor
		}
		snap.Entries = append(snap.Entries, e)
	}
	return snap
}

// List reads dir in create-revision order. The first List after Enqueue
// returns the read made by Enqueue's own transaction when that read holds
// the whole queue (not just the entry before ours). When the own entry is
// missing (the lease expired or was revoked, etcd #11456) Own is -1 and the
// recipe fails with baton.ErrSessionLost instead of granting; a session
// already Lost returns that error even if the server still shows the key,
// because the keepalive deadline passes before the server's expiry.
func (s *session) List(ctx context.Context, dir string, own queuekit.Entry) (queuekit.Snapshot, error) {
	snap, ok := s.takeFresh(dir, own)
	if !ok || snap.Partial {
		if err := s.alive(); err != nil {
			return queuekit.Snapshot{}, err
		}
		// A read on a dead session would hang on a partitioned connection
		// until the caller's deadline (etcd #19597): end it with the session.
		ctx, cancel := s.bound(ctx)
		defer cancel()
		resp, err := s.c.cli.Get(ctx, dir+"/", clientv3.WithPrefix(),
			clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend))
		if err != nil {
			if aerr := s.alive(); aerr != nil {
				return queuekit.Snapshot{}, aerr
			}
			return queuekit.Snapshot{}, opErr(ctx, "list", dir, err)
		}
		snap = s.snapshot(dir, own, resp.Kvs, resp.Header.Revision)
	}
	return s.settle(dir, own, snap)
}

// takeFresh returns, and forgets, the read Enqueue's transaction made for
// own in dir, if that is what the session keeps for dir.
func (s *session) takeFresh(dir string, own queuekit.Entry) (queuekit.Snapshot, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.fresh[dir]
	if f == nil || f.e != own {
		return queuekit.Snapshot{}, false
	}
	delete(s.fresh, dir)
	return f.snap, true
}

// settle finishes a read of dir for own: a read without own asks the
// keepalive loop to look at the lease now; a session already Lost fails
// the read even if the server still shows the key; the own entry's token
// gets the floor.
func (s *session) settle(dir string, own queuekit.Entry, snap queuekit.Snapshot) (queuekit.Snapshot, error) {
	if snap.Own < 0 && own.Key != "" {
		s.kickKeepalive()
	}
	if err := s.alive(); err != nil {
		return queuekit.Snapshot{}, err
	}
	if snap.Own >= 0 {
		tok, err := engine.FloorToken(snap.Token, s.c.opts.TokenFloor)
		if err != nil {
			return queuekit.Snapshot{}, fmt.Errorf("etcdlock: lock %q: %w", dir, err)
		}
		snap.Token = tok
	}
	return snap, nil
}

// Watch returns a channel closed once e's key is deleted after snap was
// read (the watch starts at snap.Rev+1, so a deletion in between is
// delivered at once: CURATOR-527), once the caller's own key is deleted (its
// lease was revoked or expired while waiting: etcd #19597), when the
// revision was compacted away (etcd #9715: the recipe re-reads and watches
// again from a fresh revision), when the session ends, or when ctx ends.
// Any close means "re-read"; the watches are cancelled on every exit.
func (s *session) Watch(ctx context.Context, e queuekit.Entry, snap queuekit.Snapshot) (<-chan struct{}, error) {
	if err := s.alive(); err != nil {
		return nil, err
	}
	// Registering a watch blocks until the server answers; on a partitioned
	// connection that is until the session ends, not the caller's deadline.
	wctx, cancel := s.bound(ctx)
	opts := []clientv3.OpOption{clientv3.WithRev(snap.Rev + 1), clientv3.WithFilterPut()}
	blocker := s.c.cli.Watch(wctx, e.Key, opts...)
	var self clientv3.WatchChan // nil (never ready) without an own entry
	if snap.Own >= 0 && snap.Own < len(snap.Entries) {
		self = s.c.cli.Watch(wctx, snap.Entries[snap.Own].Key, opts...)
	}
	gone := make(chan struct{})
	ok := s.spawn(func() {
		defer close(gone)
		defer cancel()
		for {
			var (
				wr   clientv3.WatchResponse
				open bool
			)
			select {
			case wr, open = <-blocker:
			case wr, open = <-self:
			case <-s.done:
				return
			case <-ctx.Done():
				return
			}
			if !open || wr.Canceled || wr.CompactRevision != 0 || wr.Err() != nil {
				return
			}
			for _, ev := range wr.Events {
				if ev.Type == mvccpb.DELETE {
					return
				}
			}
		}
	})
	if !ok {
		cancel()
		return nil, s.alive()
	}
	return gone, nil
}

// Data reads what e's key stores between its marker and its holder record
// (see entryValue). ok is false when the key is gone or holds a later
// grant (another create revision).
func (s *session) Data(ctx context.Context, e queuekit.Entry) ([]byte, bool, error) {
	if err := s.alive(); err != nil {
		return nil, false, err
	}
	var (
		d  []byte
		ok bool
	)
	s.mu.Lock()
	if f := s.fresh[entryDir(e)]; f != nil {
		d, ok = f.data[e.ID]
	}
	s.mu.Unlock()
	if ok {
		return d, true, nil // read by the grant's othersAt
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	resp, err := s.c.cli.Get(ctx, e.Key)
	if err != nil {
		if aerr := s.alive(); aerr != nil {
			return nil, false, aerr
		}
		return nil, false, opErr(ctx, "read", e.Key, err)
	}
	if len(resp.Kvs) != 1 || (e.Seq != 0 && uint64(resp.Kvs[0].CreateRevision) != e.Seq) {
		return nil, false, nil
	}
	return entryData(e.Kind, resp.Kvs[0].Value), true, nil
}

// WatchDir returns a channel closed at the first event under "<dir>/"
// after snap was read (queuekit.DirWatcher): the watch starts at snap.Rev+1,
// so a change in between closes it at once. Any event counts, puts
// included (a new lease), as do a compaction or a cancelled watch (the
// caller re-reads either way). It also closes when the session or ctx
// ends; the watch is cancelled on every exit.
func (s *session) WatchDir(ctx context.Context, dir string, snap queuekit.Snapshot) (<-chan struct{}, error) {
	if err := s.alive(); err != nil {
		return nil, err
	}
	wctx, cancel := s.bound(ctx)
	wch := s.c.cli.Watch(wctx, dir+"/", clientv3.WithPrefix(), clientv3.WithRev(snap.Rev+1))
	changed := make(chan struct{})
	ok := s.spawn(func() {
		defer close(changed)
		defer cancel()
		for {
			select {
			case wr, open := <-wch:
				if !open || wr.Canceled || wr.CompactRevision != 0 || wr.Err() != nil || len(wr.Events) > 0 {
					return
				}
			case <-s.done:
				return
			case <-ctx.Done():
				return
			}
		}
	})
	if !ok {
		cancel()
		return nil, s.alive()
	}
	return changed, nil
}

// Delete removes exactly e. A missing key is success.
//
// The first delete of an entry this session created is a plain
// DeleteRange of its key, which etcd applies for less than a transaction
// (about 45 µs less per request on one member). It cannot remove a newer
// entry: only this session's lease creates keys at that key, the pool
// gives the session one entry per directory at a time, and a newer one
// can only be created once this delete has succeeded. A delete whose
// outcome stays unknown (it may still be applied later, by a member that
// was slow or cut off) retires the session from the pool, as an unknown
// create does, so no newer entry of the session ever meets it. Every
// other delete (a second one of the same entry, one whose create revision
// is unknown) is guarded by the entry's create revision, so a stale retry
// never deletes a newer entry of the same lease at the same key (etcd
// #22082).
func (s *session) Delete(ctx context.Context, e queuekit.Entry) error {
	return s.delete(ctx, e)
}

// delete is Delete, with more operations in the guarded delete's
// transaction (which then always has its guard).
func (s *session) delete(ctx context.Context, e queuekit.Entry, more ...clientv3.Op) error {
	dir := entryDir(e)
	s.mu.Lock()
	if f := s.fresh[dir]; f != nil && f.e == e {
		delete(s.fresh, dir)
	}
	rev, ok := s.live[dir]
	first := ok && rev == int64(e.Seq)
	if first {
		delete(s.live, dir)
	}
	s.mu.Unlock()
	cmps, ops := s.exact(e) // ops: the delete of e.Key
	plain := first && len(more) == 0
	req := ops[0]
	if !plain {
		req = clientv3.OpTxn(cmps, append(slices.Clip(ops), more...), nil)
	}
	for attempt := 0; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, s.deleteTimeout())
		_, err := s.c.cli.Do(actx, req)
		cancel()
		if err == nil {
			return nil
		}
		if plain {
			s.retire()
		}
		if ctx.Err() != nil || !retryDelete(err) {
			return opErr(ctx, "delete", e.Key, err)
		}
		// Each attempt is balanced to a member of its own: one that is
		// frozen or cut off would otherwise hold the release until the
		// caller's deadline while the others could answer. Either delete
		// is idempotent, so a retry never deletes a newer entry.
		t := time.NewTimer(s.c.opts.Backoff.Delay(attempt))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return opErr(ctx, "delete", e.Key, err)
		}
	}
}

// retire takes s out of the pool for new entries, for good: a request of
// it whose outcome is unknown may still be applied.
func (s *session) retire() {
	s.c.mu.Lock()
	s.tainted = true
	s.c.mu.Unlock()
}

// deleteTimeout bounds one attempt of Delete: a healthy member answers in
// milliseconds; TTL/4 (at least 250 ms) leaves room for a loaded one.
func (s *session) deleteTimeout() time.Duration { return max(s.granted/4, 250*time.Millisecond) }

// retryDelete reports whether a failed delete attempt may have met a
// member that does not answer (its own timeout, a broken connection, no
// leader yet), rather than a refusal that a retry would meet again.
func retryDelete(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded:
		return true
	}
	return errors.Is(err, rpctypes.ErrNoLeader) ||
		errors.Is(err, rpctypes.ErrTimeout) || errors.Is(err, rpctypes.ErrTimeoutDueToLeaderFail)
}

// guard is the condition under which deleting e's key deletes e: its create
// revision, or, when that is unknown (Seq 0), its lease.
func guard(e queuekit.Entry, id clientv3.LeaseID) clientv3.Cmp {
	if e.Seq == 0 {
		return clientv3.Compare(clientv3.LeaseValue(e.Key), "=", id)
	}
	return clientv3.Compare(clientv3.CreateRevision(e.Key), "=", int64(e.Seq))
}

func entryDir(e queuekit.Entry) string {
	if i := strings.LastIndexByte(e.Key, '/'); i >= 0 {
		return e.Key[:i]
	}
	return ""
}

// Abandon hands e to the session's cleanup, which deletes it as soon as the
// server answers; until then the session is not used for e's directory
// again. If the session ends first, the lease's revoke or expiry removes it.
func (s *session) Abandon(e queuekit.Entry) { s.abandon(entryDir(e), e) }

func (s *session) abandon(dir string, e queuekit.Entry) {
	s.mu.Lock()
	delete(s.fresh, dir)
	delete(s.live, dir)
	s.mu.Unlock()
	s.c.mu.Lock()
	s.pending[dir] = e
	s.c.mu.Unlock()

	s.mu.Lock()
	start := !s.cleaning && !s.ended
	if start {
		s.cleaning = true
	}
	s.mu.Unlock()
	if start && !s.spawn(s.cleanup) {
		s.mu.Lock()
		s.cleaning = false
		s.mu.Unlock()
	}
}

// cleanup deletes abandoned entries until none is left or the session ends,
// retrying with backoff while the server does not answer.
func (s *session) cleanup() {
	timeout := min(max(s.granted/3, 500*time.Millisecond), 5*time.Second)
	for attempt := 0; ; {
		select {
		case <-s.done:
			return
		default:
		}
		s.c.mu.Lock()
		var dir string
		var e queuekit.Entry
		found := false
		for d, pe := range s.pending {
			dir, e, found = d, pe, true
			break
		}
		s.c.mu.Unlock()
		if !found {
			s.mu.Lock()
			s.cleaning = false
			s.mu.Unlock()
			// An Abandon racing this exit saw cleaning=true and did not
			// start a goroutine: look again.
			s.c.mu.Lock()
			more := len(s.pending) > 0
			s.c.mu.Unlock()
			if more {
				s.mu.Lock()
				restart := !s.cleaning && !s.ended
				if restart {
					s.cleaning = true
				}
				s.mu.Unlock()
				if restart {
					continue
				}
			}
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		_, err := s.c.cli.Txn(ctx).If(guard(e, s.id)).Then(clientv3.OpDelete(e.Key)).Commit()
		cancel()
		if err == nil {
			attempt = 0
			s.c.mu.Lock()
			if s.pending[dir] == e {
				delete(s.pending, dir)
			}
			retire := s.c.settleLocked(s)
			s.c.mu.Unlock()
			if retire {
				s.close()
			}
			continue
		}
		t := time.NewTimer(s.c.opts.Backoff.Delay(attempt))
		attempt++
		select {
		case <-t.C:
		case <-s.done:
			t.Stop()
			return
		}
	}
}

// grantID names one grant: the key alone is reused by the next grant on the
// same pooled lease, the key with its create revision never is.
func grantID(key string, createRev int64) string {
	return key + "@" + strconv.FormatInt(createRev, 10)
}
