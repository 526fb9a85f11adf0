package etcdlock_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/engine/queuekit"
	"github.com/baton-go/baton/engine/queuekit/drillhook"
	"github.com/baton-go/baton/etcdlock"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestStaleReleaseKeepsNewerLock reproduces etcd #22082: a release retried
// after the same lease re-acquired must not delete the newer key, which has
// the same name ("<name>/<lease>") but a newer create revision.
func TestStaleReleaseKeepsNewerLock(t *testing.T) {
	name := uniq(t)
	c := newClient(t, etcdlock.Options{}).Backend()
	ctx := context.Background()

	s1, old := enqueued(t, c, name)
	if err := s1.Delete(ctx, old); err != nil { // the release whose answer "was lost"
		t.Fatalf("Delete(old) = %v", err)
	}
	c.Done(s1, name)

	s2 := sessionAgain(t, c, name)
	if s2.ID() != s1.ID() {
		t.Fatalf("Session(%q) again = lease %s, want the pooled lease %s", name, s2.ID(), s1.ID())
	}
	cur, err := s2.Enqueue(ctx, name, queuekit.KindMutex)
	if err != nil {
		t.Fatalf("Enqueue again = %v", err)
	}
	if cur.Key != old.Key || cur.Seq <= old.Seq {
		t.Fatalf("re-enqueued entry = %+v, want key %q with a create revision > %d", cur, old.Key, old.Seq)
	}
	if err := s1.Delete(ctx, old); err != nil { // the retried, stale release
		t.Fatalf("retried Delete(old) = %v, want nil (already gone)", err)
	}
	snap, err := s2.List(ctx, name, cur)
	if err != nil {
		t.Fatalf("List = %v", err)
	}
	if snap.Own != 0 {
		t.Errorf("after a stale release the newer entry is at %d in %+v, want 0 (still held)", snap.Own, snap.Entries)
	}
	if err := s2.Delete(ctx, cur); err != nil {
		t.Fatalf("Delete(cur) = %v", err)
	}
}

// TestHolderLeaseRevoked: the server revokes the holder's lease; the holder
// learns it from its next keepalive: the lease is Lost and its context is
// cancelled with a cause wrapping baton.ErrLost.
func TestHolderLeaseRevoked(t *testing.T) {
	name := uniq(t)
	c := newClient(t, etcdlock.Options{TTL: 2 * time.Second})
	l := lock(t, mutex(t, c, name), name)
	raw := rawClient(t, "")
	if _, err := raw.Revoke(context.Background(), leaseOf(t, keyOf(l))); err != nil {
		t.Fatalf("Revoke = %v", err)
	}
	select {
	case <-l.Done():
	case <-time.After(2 * time.Second): // a keepalive goes out every TTL/3
		t.Fatalf("lease still %v 2s after its etcd lease was revoked, want %v", l.State(), baton.Lost)
	}
	if st := l.State(); st != baton.Lost {
		t.Errorf("State() = %v, want %v", st, baton.Lost)
	}
	if err := context.Cause(l.Context()); !errors.Is(err, baton.ErrLost) {
		t.Errorf("context cause = %v, want %v", err, baton.ErrLost)
	}
	if err := l.Release(context.Background()); !errors.Is(err, baton.ErrLost) {
		t.Errorf("Release() of a lost lease = %v, want %v", err, baton.ErrLost)
	}
	// The lost lease is never reused: a new grant gets a new lease.
	l2 := lock(t, mutex(t, c, name), name)
	defer release(t, l2)
	if keyOf(l2) == keyOf(l) {
		t.Errorf("grant after loss reused key %q, want a new lease", keyOf(l2))
	}
}

// TestSuspendedBeforeLost partitions the holder from the server (a
// blackhole that keeps the TCP connection open). The holder must see
// Suspended, then Lost strictly before the server expires its lease: at
// the moment of Lost its key is still on the server, so nobody else can
// have been granted the lock yet.
func TestSuspendedBeforeLost(t *testing.T) {
	name := uniq(t)
	p := proxy(t)
	c := newClientOn(t, rawClient(t, p.Addr), etcdlock.Options{TTL: 2 * time.Second})
	raw := rawClient(t, "")
	l := lock(t, mutex(t, c, name), name)
	id := leaseOf(t, keyOf(l))

	if err := p.Blackhole(""); err != nil {
		t.Fatalf("Blackhole = %v", err)
	}
	t.Cleanup(p.Heal)
	cut := time.Now()

	var suspended, lost time.Time
	deadline := time.After(5 * time.Second)
	for lost.IsZero() {
		st, changed := l.Observe()
		switch st {
		case baton.Suspended:
			if suspended.IsZero() {
				suspended = time.Now()
			}
		case baton.Lost:
			lost = time.Now()
			continue
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("lease state %v 5s after the partition, want %v", st, baton.Lost)
		}
	}
	// Check the server at once: the key and lease must still be there.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	resp, err := raw.Get(ctx, keyOf(l))
	if err != nil {
		t.Fatalf("Get(%q) = %v", keyOf(l), err)
	}
	if len(resp.Kvs) != 1 {
		t.Errorf("holder's key gone from the server when the holder saw Lost (%v after the cut), want Lost first", lost.Sub(cut))
	}
	if ttl, err := raw.TimeToLive(ctx, id); err != nil || ttl.TTL < 0 {
		t.Errorf("TimeToLive(%x) at Lost = %v, %v; want the lease still alive on the server", int64(id), ttl, err)
	}
	if suspended.IsZero() || !suspended.Before(lost) {
		t.Errorf("Suspended at %v, Lost at %v after the cut; want Suspended strictly before Lost", sinceOrZero(suspended, cut), lost.Sub(cut))
	}
	if err := context.Cause(l.Context()); !errors.Is(err, baton.ErrLost) {
		t.Errorf("context cause = %v, want %v", err, baton.ErrLost)
	}
	t.Logf("after the cut: Suspended %v, Lost %v", sinceOrZero(suspended, cut), lost.Sub(cut))
	// And the server does expire it afterwards (TTL + the 500ms lessor tick).
	if !eventually(4*time.Second, func() bool {
		r, err := raw.Get(context.Background(), keyOf(l))
		return err == nil && len(r.Kvs) == 0
	}) {
		t.Errorf("holder's key %q still on the server 4s after Lost", keyOf(l))
	}
}

func sinceOrZero(t, base time.Time) time.Duration {
	if t.IsZero() {
		return 0
	}
	return t.Sub(base)
}

// TestWaiterLeaseRevoked reproduces etcd #19597: a waiter whose own lease is
// revoked while it waits must return baton.ErrSessionLost promptly, not
// keep waiting on a dead queue position.
func TestWaiterLeaseRevoked(t *testing.T) {
	name := uniq(t)
	// The waiter's TTL is long (keepalives every 2s) so that only its watch
	// on its own key can notice the revoke promptly.
	a, b := newClient(t, etcdlock.Options{}), newClient(t, etcdlock.Options{TTL: 6 * time.Second})
	la := lock(t, mutex(t, a, name), name)
	defer release(t, la)

	errc := make(chan error, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	mb := mutex(t, b, name)
	go func() {
		l, err := mb.Lock(ctx)
		if l != nil {
			l.Release(context.Background())
		}
		errc <- err
	}()
	if !eventually(3*time.Second, func() bool { return len(entries(t, a, name)) == 2 }) {
		t.Fatalf("Entries(%q) = %q, want the holder and one waiter", name, entries(t, a, name))
	}
	waiter := entries(t, a, name)[1]
	raw := rawClient(t, "")
	if _, err := raw.Revoke(context.Background(), leaseOf(t, waiter)); err != nil {
		t.Fatalf("Revoke = %v", err)
	}
	revoked := time.Now()
	select {
	case err := <-errc:
		if !errors.Is(err, baton.ErrSessionLost) {
			t.Errorf("Lock(%q) after the waiter's lease was revoked = %v, want %v", name, err, baton.ErrSessionLost)
		}
		if took := time.Since(revoked); took > 500*time.Millisecond {
			t.Errorf("Lock(%q) returned %v after the revoke, want promptly", name, took)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("Lock(%q) still waiting 5s after its lease was revoked", name)
	}
	if la.State() != baton.Held {
		t.Errorf("holder state = %v, want %v", la.State(), baton.Held)
	}
}

// TestCompactionDuringWait reproduces etcd #9715: the revision a waiter
// watches from is compacted before its watch registers. The waiter must
// recover (re-read, watch again) and acquire after the holder releases.
func TestCompactionDuringWait(t *testing.T) {
	name := uniq(t)
	raw := rawClient(t, "")
	junk := name + "-junk"
	t.Cleanup(func() { raw.Delete(context.Background(), junk) })
	var watches atomic.Int32
	compactErr := make(chan error, 1)
	hooks := &drillhook.Hooks{BeforeWatch: func(string) {
		if watches.Add(1) != 1 {
			return
		}
		// Two writes, then compact up to the latest: the waiter's read
		// revision + 1 is now compacted.
		ctx := context.Background()
		var rev int64
		for range 2 {
			r, err := raw.Put(ctx, junk, "x")
			if err != nil {
				compactErr <- err
				return
			}
			rev = r.Header.Revision
		}
		_, err := raw.Compact(ctx, rev, clientv3.WithCompactPhysical())
		compactErr <- err
	}}
	a := newClient(t, etcdlock.Options{})
	b := newClient(t, etcdlock.Options{})
	la := lock(t, mutex(t, a, name), name)

	type result struct {
		l   *baton.Lease
		err error
	}
	got := make(chan result, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ctx = drillhook.With(ctx, hooks)
	mb := mutex(t, b, name)
	go func() {
		l, err := mb.Lock(ctx)
		got <- result{l, err}
	}()
	select {
	case err := <-compactErr:
		if err != nil {
			t.Fatalf("compaction in the hook = %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("waiter never reached its watch")
	}
	if !eventually(3*time.Second, func() bool { return watches.Load() >= 2 }) {
		t.Fatalf("waiter watched %d times, want a second watch after the compacted one", watches.Load())
	}
	release(t, la)
	r := <-got
	if r.err != nil {
		t.Fatalf("Lock(%q) after compaction and release = %v, want nil", name, r.err)
	}
	if r.l.Token() <= la.Token() {
		t.Errorf("token after compaction = %d, want > %d", r.l.Token(), la.Token())
	}
	release(t, r.l)
}

// TestEnqueueEndsWithSession: a Lock that reuses a pooled session sends
// its enqueue at once, and the partition cuts it off before the answer
// comes back. The lease is lost within its TTL, and Lock must fail with
// baton.ErrSessionLost then, not wait for an answer that will not come
// until the caller's deadline (seen on a loaded cluster, where the key was
// applied and listed while its member's answer was still on the way).
func TestEnqueueEndsWithSession(t *testing.T) {
	name := uniq(t)
	p := proxy(t)
	const ttl = 2 * time.Second
	c := newClientOn(t, rawClient(t, p.Addr), etcdlock.Options{TTL: ttl})
	m := mutex(t, c, name)
	release(t, lock(t, m, name)) // the session is pooled, idle and Held
	if err := p.Blackhole(""); err != nil {
		t.Fatalf("Blackhole = %v", err)
	}
	t.Cleanup(p.Heal)
	cut := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l, err := m.Lock(ctx)
	took := time.Since(cut)
	if l != nil {
		t.Fatalf("Lock(%q) through a partition = a lease (token %d), want an error", name, l.Token())
	}
	if !errors.Is(err, baton.ErrSessionLost) || took > ttl+time.Second {
		t.Errorf("Lock(%q) through a partition = %v after %v, want %v within the TTL (%v)", name, err, took.Round(time.Millisecond), baton.ErrSessionLost, ttl)
	}
}

// TestUnknownReleaseRetiresSession: a release's plain delete whose outcome
// stays unknown (the server cut off) may still be applied later, so the
// session must never again serve the directory: the next grant there gets
// another lease. Without that, a late delete would remove its newer entry
// at the same key.
func TestUnknownReleaseRetiresSession(t *testing.T) {
	name := uniq(t)
	p := proxy(t)
	c := newClientOn(t, rawClient(t, p.Addr), etcdlock.Options{}).Backend()
	ctx := context.Background()
	s1, e := enqueued(t, c, name)
	if err := p.Blackhole(""); err != nil {
		t.Fatalf("Blackhole = %v", err)
	}
	dctx, cancel := context.WithTimeout(ctx, 400*time.Millisecond)
	err := s1.Delete(dctx, e)
	cancel()
	p.Heal()
	if err == nil {
		t.Fatal("Delete through a blackhole = nil, want an error")
	}
	if err := s1.Delete(ctx, e); err != nil { // the release retried, healed
		t.Fatalf("Delete again = %v", err)
	}
	c.Done(s1, name)
	if s2 := sessionAgain(t, c, name); s2.ID() == s1.ID() {
		t.Errorf("Session(%q) after a release of unknown outcome = lease %s again, want another", name, s2.ID())
	}
}

// enqueued takes a session of c for name and enqueues its mutex entry.
func enqueued(t *testing.T, c queuekit.Backend, name string) (queuekit.Session, queuekit.Entry) {
	t.Helper()
	s, err := c.Session(t.Context(), name)
	if err != nil {
		t.Fatalf("Session(%q) = %v", name, err)
	}
	e, err := s.Enqueue(t.Context(), name, queuekit.KindMutex)
	if err != nil {
		t.Fatalf("Enqueue = %v", err)
	}
	return s, e
}

// sessionAgain takes c's next session for name, handed back at cleanup.
func sessionAgain(t *testing.T, c queuekit.Backend, name string) queuekit.Session {
	t.Helper()
	s, err := c.Session(t.Context(), name)
	if err != nil {
		t.Fatalf("Session(%q) again = %v", name, err)
	}
	t.Cleanup(func() { c.Done(s, name) })
	return s
}
