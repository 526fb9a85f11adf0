package etcdlock_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/etcdlock"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
)

func TestLockUnlock(t *testing.T) {
	c := newClient(t, etcdlock.Options{})
	name := uniq(t)
	m := mutex(t, c, name)
	l := lock(t, m, name)
	if got := l.State(); got != baton.Held {
		t.Errorf("State() = %v, want %v", got, baton.Held)
	}
	if got := l.Engine(); got != "etcd" {
		t.Errorf("Engine() = %q, want %q", got, "etcd")
	}
	if l.Token() == 0 {
		t.Errorf("Token() = 0, want a create revision > 0")
	}
	if keys := entries(t, c, name); len(keys) != 1 || keys[0] != keyOf(l) {
		t.Errorf("Entries(%q) = %q, want [%q]", name, keys, keyOf(l))
	}
	release(t, l)
	if keys := entries(t, c, name); len(keys) != 0 {
		t.Errorf("Entries(%q) after release = %q, want none", name, keys)
	}
	if err := context.Cause(l.Context()); !errors.Is(err, baton.ErrReleased) {
		t.Errorf("context cause after release = %v, want %v", err, baton.ErrReleased)
	}
}

func TestTwoClientsExclude(t *testing.T) {
	name := uniq(t)
	a, b := newClient(t, etcdlock.Options{}), newClient(t, etcdlock.Options{})
	la := lock(t, mutex(t, a, name), name)

	mb := mutex(t, b, name)
	type result struct {
		l   *baton.Lease
		err error
	}
	got := make(chan result, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	go func() {
		l, err := mb.Lock(ctx)
		got <- result{l, err}
	}()
	select {
	case r := <-got:
		t.Fatalf("Lock(%q) by b while a holds = %v, %v; want it to wait", name, r.l, r.err)
	case <-time.After(300 * time.Millisecond):
	}
	release(t, la)
	r := <-got
	if r.err != nil {
		t.Fatalf("Lock(%q) by b after a's release = %v, want nil", name, r.err)
	}
	if r.l.Token() <= la.Token() {
		t.Errorf("token of b = %d, want > a's %d", r.l.Token(), la.Token())
	}
	release(t, r.l)
}

func TestTokensStrictlyIncrease(t *testing.T) {
	name := uniq(t)
	clients := []*etcdlock.Client{newClient(t, etcdlock.Options{}), newClient(t, etcdlock.Options{})}
	var last uint64
	for i := range 6 {
		l := lock(t, mutex(t, clients[i%2], name), name)
		if l.Token() <= last {
			t.Errorf("grant %d: token %d, want > %d", i, l.Token(), last)
		}
		last = l.Token()
		release(t, l)
	}
}

func TestTryLock(t *testing.T) {
	name := uniq(t)
	a, b := newClient(t, etcdlock.Options{}), newClient(t, etcdlock.Options{})
	la := lock(t, mutex(t, a, name), name)
	mb := mutex(t, b, name)
	ctx := context.Background()
	if l, err := mb.TryLock(ctx); !errors.Is(err, baton.ErrNotAcquired) {
		t.Fatalf("TryLock(%q) while held = %v, %v; want %v", name, l, err, baton.ErrNotAcquired)
	}
	if keys := entries(t, a, name); len(keys) != 1 || keys[0] != keyOf(la) {
		t.Errorf("Entries(%q) after a failed TryLock = %q, want only the holder's [%q]", name, keys, keyOf(la))
	}
	release(t, la)
	lb, err := mb.TryLock(ctx)
	if err != nil {
		t.Fatalf("TryLock(%q) when free = %v, want nil", name, err)
	}
	release(t, lb)
}

// TestLayout checks the etcdctl-lock layout: the key is "<name>/<lease hex>"
// on that lease, its value the holder record (etcdctl lock writes the empty
// value; neither it nor concurrency.Mutex reads values), and baton and
// concurrency.Mutex (which `etcdctl lock` uses) exclude each other.
func TestLayout(t *testing.T) {
	name := uniq(t)
	c := newClient(t, etcdlock.Options{Process: baton.Process{Host: "web-1", PID: 42, Program: "job"}})
	raw := rawClient(t, "")
	ctx := context.Background()

	l := lock(t, mutex(t, c, name), name)
	resp, err := raw.Get(ctx, keyOf(l))
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("Get(%q) = %v, %v; want one key", keyOf(l), resp, err)
	}
	kv := resp.Kvs[0]
	// The name concurrency.Mutex (and so `etcdctl lock`) gives the key of
	// a session with this lease.
	if want := fmt.Sprintf("%s/%x", name, clientv3.LeaseID(kv.Lease)); keyOf(l) != want {
		t.Errorf("Owner() = %q, want %q", keyOf(l), want)
	}
	if want := "host=web-1&pid=42&prog=job"; string(kv.Value) != want {
		t.Errorf("key %q has value %q, want the holder record %q", kv.Key, kv.Value, want)
	}
	ttl, err := raw.TimeToLive(ctx, clientv3.LeaseID(kv.Lease), clientv3.WithAttachedKeys())
	if err != nil || ttl.TTL <= 0 || len(ttl.Keys) != 1 || string(ttl.Keys[0]) != keyOf(l) {
		t.Errorf("TimeToLive(%x) = %v, %v; want a live lease with the one key %q", kv.Lease, ttl, err, keyOf(l))
	}

	sess, err := concurrency.NewSession(raw, concurrency.WithTTL(5))
	if err != nil {
		t.Fatalf("concurrency.NewSession = %v", err)
	}
	defer sess.Close()
	cm := concurrency.NewMutex(sess, name)
	if err := cm.TryLock(ctx); !errors.Is(err, concurrency.ErrLocked) {
		t.Errorf("concurrency.Mutex.TryLock(%q) while baton holds = %v, want %v", name, err, concurrency.ErrLocked)
	}
	release(t, l)

	if err := cm.Lock(ctx); err != nil {
		t.Fatalf("concurrency.Mutex.Lock(%q) = %v", name, err)
	}
	if l, err := mutex(t, c, name).TryLock(ctx); !errors.Is(err, baton.ErrNotAcquired) {
		t.Errorf("TryLock(%q) while concurrency.Mutex holds = %v, %v; want %v", name, l, err, baton.ErrNotAcquired)
	}
	if err := cm.Unlock(ctx); err != nil {
		t.Fatalf("concurrency.Mutex.Unlock = %v", err)
	}
}

// TestLeaseReused checks the pool: sequential grants on one name reuse one
// lease, so a lock+unlock needs no new Grant.
func TestLeaseReused(t *testing.T) {
	name := uniq(t)
	c := newClient(t, etcdlock.Options{})
	m := mutex(t, c, name)
	l1 := lock(t, m, name)
	release(t, l1)
	l2 := lock(t, m, name)
	release(t, l2)
	if keyOf(l1) != keyOf(l2) || l1.Owner() == l2.Owner() {
		t.Errorf("Owner() of two sequential grants = %q, %q; want the same pooled lease under distinct grant owners", l1.Owner(), l2.Owner())
	}
}

func TestLockHonoursContext(t *testing.T) {
	name := uniq(t)
	a, b := newClient(t, etcdlock.Options{}), newClient(t, etcdlock.Options{})
	la := lock(t, mutex(t, a, name), name)
	defer release(t, la)

	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	l, err := mutex(t, b, name).Lock(ctx)
	took := time.Since(start)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Lock(%q) with a 300ms deadline = %v, %v; want %v", name, l, err, context.DeadlineExceeded)
	}
	if took > 550*time.Millisecond {
		t.Errorf("Lock(%q) returned %v after start, want within deadline + 250ms", name, took)
	}
	// The waiter's key is removed by the session's cleanup.
	if !eventually(2*time.Second, func() bool { return len(entries(t, a, name)) == 1 }) {
		t.Errorf("Entries(%q) = %q, want only the holder's key after the cancelled waiter", name, entries(t, a, name))
	}
}

func TestClosedClient(t *testing.T) {
	name := uniq(t)
	c := newClient(t, etcdlock.Options{})
	m := mutex(t, c, name)
	l := lock(t, m, name)
	if err := c.Close(); err != nil {
		t.Fatalf("Close() = %v, want nil", err)
	}
	if st := l.State(); st != baton.Lost {
		t.Errorf("lease state after Close = %v, want %v", st, baton.Lost)
	}
	other := newClient(t, etcdlock.Options{})
	if keys := entries(t, other, name); len(keys) != 0 {
		t.Errorf("Entries(%q) after Close = %q, want none (lease revoked)", name, keys)
	}
	ctx := context.Background()
	if err := c.Close(); !errors.Is(err, baton.ErrClosed) {
		t.Errorf("second Close() = %v, want %v", err, baton.ErrClosed)
	}
	if _, err := c.Mutex(name); !errors.Is(err, baton.ErrClosed) {
		t.Errorf("Mutex(%q) after Close = %v, want %v", name, err, baton.ErrClosed)
	}
	if _, err := m.Lock(ctx); !errors.Is(err, baton.ErrClosed) {
		t.Errorf("Lock(%q) after Close = %v, want %v", name, err, baton.ErrClosed)
	}
	if _, err := c.Entries(ctx, name); !errors.Is(err, baton.ErrClosed) {
		t.Errorf("Entries(%q) after Close = %v, want %v", name, err, baton.ErrClosed)
	}
}

func TestNewOptions(t *testing.T) {
	raw := rawClient(t, "")
	if _, err := etcdlock.New(raw, etcdlock.Options{TTL: -time.Second}); !errors.Is(err, baton.ErrInvalidOption) {
		t.Errorf("New(TTL -1s) = %v, want %v", err, baton.ErrInvalidOption)
	}
	if _, err := etcdlock.New(raw, etcdlock.Options{TTL: baton.MaxTTL + time.Second}); !errors.Is(err, baton.ErrInvalidOption) {
		t.Errorf("New(TTL MaxTTL+1s) = %v, want %v", err, baton.ErrInvalidOption)
	}
	if _, err := etcdlock.New(nil, etcdlock.Options{}); !errors.Is(err, baton.ErrInvalidOption) {
		t.Errorf("New(nil client) = %v, want %v", err, baton.ErrInvalidOption)
	}
	for _, tc := range []struct {
		name string
		ttl  time.Duration
		want time.Duration
	}{
		{"zero is the default", 0, etcdlock.DefaultTTL},
		{"rounded up", 1500 * time.Millisecond, 2 * time.Second},
		{"whole seconds kept", 3 * time.Second, 3 * time.Second},
		{"sub-second", time.Millisecond, time.Second},
		{"MaxTTL", baton.MaxTTL, baton.MaxTTL},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bc, err := etcdlock.New(raw, etcdlock.Options{TTL: tc.ttl})
			if err != nil {
				t.Fatalf("New(TTL %v) = %v", tc.ttl, err)
			}
			defer bc.Close()
			c, _ := baton.As[*etcdlock.Client](bc)
			if got := c.TTL(); got != tc.want {
				t.Errorf("New(TTL %v).TTL() = %v, want %v", tc.ttl, got, tc.want)
			}
		})
	}
}

// TestTTLClamped: etcd raises a 1s TTL to its minimum (2s with the test
// server's timing) without an error; GrantedTTL must say so.
func TestTTLClamped(t *testing.T) {
	name := uniq(t)
	c := newClient(t, etcdlock.Options{TTL: time.Second})
	if got := c.GrantedTTL(); got != 0 {
		t.Errorf("GrantedTTL() before any grant = %v, want 0", got)
	}
	l := lock(t, mutex(t, c, name), name)
	defer release(t, l)
	if got := c.GrantedTTL(); got <= c.TTL() {
		t.Errorf("GrantedTTL() = %v with TTL() = %v, want the server's larger minimum", got, c.TTL())
	}
	raw := rawClient(t, "")
	ttl, err := raw.TimeToLive(context.Background(), leaseOf(t, keyOf(l)))
	if err != nil {
		t.Fatalf("TimeToLive = %v", err)
	}
	if got := time.Duration(ttl.GrantedTTL) * time.Second; got != c.GrantedTTL() {
		t.Errorf("server's granted TTL = %v, GrantedTTL() = %v; want equal", got, c.GrantedTTL())
	}
}
