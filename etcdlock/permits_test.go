package etcdlock_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/engine/queuekit"
	"github.com/baton-go/baton/etcdlock"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
)

func semaphore(t *testing.T, c *etcdlock.Client, name string, n int) *queuekit.Semaphore {
	t.Helper()
	s, err := c.Semaphore(name, n)
	if err != nil {
		t.Fatalf("Semaphore(%q, %d) = %v", name, n, err)
	}
	return s
}

// granted waits up to d for a lease on ch; nil if none came.
func granted(ch <-chan *baton.Lease, d time.Duration) *baton.Lease {
	select {
	case l := <-ch:
		return l
	case <-time.After(d):
		return nil
	}
}

// TestPermitsReleasedOutOfOrder: holders release in any order. With two
// permits, A and B held, C and D waiting: B's release grants C; C's
// release must then grant D at once, while A still holds. (A waiter that
// watched only the entry N places before it, A, would sleep until A's
// release.)
func TestPermitsReleasedOutOfOrder(t *testing.T) {
	c := newClient(t, etcdlock.Options{})
	name := uniq(t)
	s := semaphore(t, c, name, 2)
	a, b := lock(t, s, "A"), lock(t, s, "B")
	defer release(t, a)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cw := acquireAsync(t, ctx, s.Acquire)
	if !eventually(5*time.Second, func() bool { return len(entries(t, c, name+"/leases")) == 3 }) {
		t.Fatal("C did not queue")
	}
	dw := acquireAsync(t, ctx, s.Acquire)
	if !eventually(5*time.Second, func() bool { return len(entries(t, c, name+"/leases")) == 4 }) {
		t.Fatal("D did not queue")
	}
	if l := granted(cw, 300*time.Millisecond); l != nil {
		t.Fatal("C granted while A and B hold both permits")
	}
	release(t, b)
	cl := granted(cw, 5*time.Second)
	if cl == nil {
		t.Fatal("C not granted 5s after B's release")
	}
	if l := granted(dw, 300*time.Millisecond); l != nil {
		t.Fatal("D granted while A and C hold both permits")
	}
	release(t, cl)
	dl := granted(dw, 2*time.Second)
	if dl == nil {
		t.Fatal("D not granted 2s after C's release while A holds the other permit")
	}
	release(t, dl)
}

// TestPermitWaiterLeaves: a waiter that gives up in the middle of the line
// leaves its successor watching the waiter before it, which is granted
// later: the successor must still get its turn.
func TestPermitWaiterLeaves(t *testing.T) {
	c := newClient(t, etcdlock.Options{})
	name := uniq(t)
	s := semaphore(t, c, name, 1)
	a := lock(t, s, "A")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	queued := func(n int) {
		t.Helper()
		if !eventually(5*time.Second, func() bool { return len(entries(t, c, name+"/leases")) == n }) {
			t.Fatalf("entries = %v, want %d", entries(t, c, name+"/leases"), n)
		}
	}
	bw := acquireAsync(t, ctx, s.Acquire)
	queued(2)
	cctx, ccancel := context.WithCancel(ctx)
	cdone := make(chan error, 1)
	go func() {
		_, err := s.Acquire(cctx)
		cdone <- err
	}()
	queued(3)
	dw := acquireAsync(t, ctx, s.Acquire)
	queued(4)
	ccancel()
	if err := <-cdone; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Acquire = %v, want context.Canceled", err)
	}
	queued(3)
	release(t, a)
	bl := granted(bw, 5*time.Second)
	if bl == nil {
		t.Fatal("B not granted after A's release")
	}
	if l := granted(dw, 300*time.Millisecond); l != nil {
		t.Fatal("D granted while B holds the only permit")
	}
	release(t, bl)
	dl := granted(dw, 2*time.Second)
	if dl == nil {
		t.Fatal("D not granted 2s after B's release")
	}
	release(t, dl)
}

// TestPermitsManyWaiters: 3 permits, 12 contenders each taking a permit
// 5 times; never more than 3 holders at once, and every acquire completes.
func TestPermitsManyWaiters(t *testing.T) {
	c := newClient(t, etcdlock.Options{})
	name := uniq(t)
	s := semaphore(t, c, name, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var holders, most atomic.Int32
	var wg sync.WaitGroup
	for range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 5 {
				l, err := s.Acquire(ctx)
				if err != nil {
					t.Errorf("Acquire = %v", err)
					return
				}
				h := holders.Add(1)
				for m := most.Load(); h > m && !most.CompareAndSwap(m, h); m = most.Load() {
				}
				time.Sleep(2 * time.Millisecond)
				holders.Add(-1)
				if err := l.Release(ctx); err != nil {
					t.Errorf("Release = %v", err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if m := most.Load(); m > 3 {
		t.Errorf("%d holders at once, want at most 3", m)
	}
}

// TestPermitTwoRequests: an uncontended acquire+release of a permit is two
// requests (the create that counts the queue, the guarded delete), and
// with the permits taken TryAcquire gives up and removes its entry.
func TestPermitTwoRequests(t *testing.T) {
	var calls atomic.Int64
	count := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		if method != "/etcdserverpb.Lease/LeaseGrant" {
			calls.Add(1)
		}
		return invoker(ctx, method, req, reply, cc, opts...)
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{server.Endpoint}, DialTimeout: 5 * time.Second,
		DialOptions: []grpc.DialOption{grpc.WithChainUnaryInterceptor(count)}})
	if err != nil {
		t.Fatalf("clientv3.New = %v", err)
	}
	t.Cleanup(func() { cli.Close() }) // after c's Close, which revokes its leases on cli
	c := newClientOn(t, cli, etcdlock.Options{})
	name := uniq(t)
	s := semaphore(t, c, name, 2)
	release(t, lock(t, s, "warm-up")) // the lease grant
	for i := range 3 {
		before := calls.Load()
		release(t, lock(t, s, "Acquire"))
		if got := calls.Load() - before; got != 2 {
			t.Errorf("acquire+release %d: %d requests, want 2", i, got)
		}
	}
	a, b := lock(t, s, "A"), lock(t, s, "B")
	defer release(t, a)
	defer release(t, b)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if l, err := s.TryAcquire(ctx); !errors.Is(err, baton.ErrNotAcquired) {
		if l != nil {
			release(t, l)
		}
		t.Fatalf("TryAcquire with both permits taken = %v, want ErrNotAcquired", err)
	}
	if keys := entries(t, c, name+"/leases"); len(keys) != 2 {
		t.Errorf("lease keys after a refused TryAcquire = %q, want the 2 holders'", keys)
	}
}

// TestPermitGrantedAtFirstReadPasses: a lease that was not among the first
// N at its create may be watched as a waiter by the one behind, even when
// its own first read already grants it. X creates its lease behind two
// holders, and its read is held back (a slow Range) while W queues behind
// it and watches it; a holder leaves; X's read grants it. X must still
// wake W, now first in line, so that the other holder's release grants W
// while X holds.
func TestPermitGrantedAtFirstReadPasses(t *testing.T) {
	var slow atomic.Bool
	delay := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		if method == "/etcdserverpb.KV/Range" && slow.CompareAndSwap(true, false) {
			time.Sleep(time.Second)
		}
		return invoker(ctx, method, req, reply, cc, opts...)
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{server.Endpoint}, DialTimeout: 5 * time.Second,
		DialOptions: []grpc.DialOption{grpc.WithChainUnaryInterceptor(delay)}})
	if err != nil {
		t.Fatalf("clientv3.New = %v", err)
	}
	t.Cleanup(func() { cli.Close() }) // after xc's Close, which revokes its leases on cli
	a, w, xc := newClient(t, etcdlock.Options{}), newClient(t, etcdlock.Options{}), newClientOn(t, cli, etcdlock.Options{})
	name := uniq(t)
	sa := semaphore(t, a, name, 2)
	h1, h2 := lock(t, sa, "H1"), lock(t, sa, "H2")
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	slow.Store(true)
	xw := acquireAsync(t, ctx, semaphore(t, xc, name, 2).Acquire)
	if !eventually(5*time.Second, func() bool { return len(entries(t, a, name+"/leases")) == 3 }) {
		t.Fatal("X did not queue")
	}
	ww := acquireAsync(t, ctx, semaphore(t, w, name, 2).Acquire)
	if !eventually(5*time.Second, func() bool { return len(entries(t, a, name+"/leases")) == 4 }) {
		t.Fatal("W did not queue")
	}
	time.Sleep(200 * time.Millisecond) // W reads and watches X
	release(t, h1)
	x := granted(xw, 5*time.Second)
	if x == nil {
		t.Fatal("X not granted after H1's release")
	}
	defer release(t, x)
	if l := granted(ww, 300*time.Millisecond); l != nil {
		t.Fatal("W granted while H2 and X hold both permits")
	}
	release(t, h2)
	l := granted(ww, 2*time.Second)
	if l == nil {
		t.Fatal("W not granted 2s after H2's release while X holds the other permit")
	}
	release(t, l)
}

// disagreements records a semaphore's reports.
type disagreements struct {
	mu  sync.Mutex
	got []queuekit.Disagreement
}

func watchDisagreements(s *queuekit.Semaphore) *disagreements {
	r := &disagreements{}
	s.OnDisagreement(func(d queuekit.Disagreement) {
		r.mu.Lock()
		r.got = append(r.got, d)
		r.mu.Unlock()
	})
	return r
}

func (r *disagreements) all() []queuekit.Disagreement {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]queuekit.Disagreement(nil), r.got...)
}

// TestPermitDisagreementAtGrant: with the one permit of N=1 held, a client
// configured with N=1000 is granted at its create (it admits by its own N)
// and must report the N=1 lease, once; a second client with N=1000 reports
// the N=1 lease but not the first N=1000 one (negative control), and an
// acquire of an empty semaphore reports nothing.
func TestPermitDisagreementAtGrant(t *testing.T) {
	name := uniq(t)
	one := semaphore(t, newClient(t, etcdlock.Options{}), name, 1)
	empty := watchDisagreements(one)
	l1 := lock(t, one, "N=1")
	defer release(t, l1)
	if got := empty.all(); len(got) != 0 {
		t.Errorf("disagreements of an acquire of an empty semaphore = %+v, want none", got)
	}

	big := semaphore(t, newClient(t, etcdlock.Options{}), name, 1000)
	rb := watchDisagreements(big)
	lb := lock(t, big, "N=1000 beside N=1")
	defer release(t, lb)
	got := rb.all()
	if len(got) != 1 || got[0].Permits != 1 || got[0].Want != 1000 || got[0].Name != name || !strings.HasPrefix(l1.Owner(), got[0].Lease+"@") {
		t.Fatalf("disagreements = %+v, want one for lease %s with Permits 1, Want 1000", got, l1.Owner())
	}
	l2 := lock(t, big, "N=1000 again")
	release(t, l2)
	if got := rb.all(); len(got) != 1 {
		t.Errorf("disagreements after a second grant = %+v, want still one (each lease once per Semaphore)", got)
	}

	other := semaphore(t, newClient(t, etcdlock.Options{}), name, 1000)
	ro := watchDisagreements(other)
	lo := lock(t, other, "second N=1000")
	defer release(t, lo)
	if got := ro.all(); len(got) != 1 || got[0].Permits != 1 || !strings.HasPrefix(l1.Owner(), got[0].Lease+"@") {
		t.Errorf("disagreements of a second N=1000 client = %+v, want only the N=1 lease %s", got, l1.Owner())
	}
}
