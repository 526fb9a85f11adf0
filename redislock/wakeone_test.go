package redislock_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/engine"
	"github.com/baton-go/baton/internal/cmdcount"
	"github.com/baton-go/baton/redislock"
)

// wakeOneRig is a holder and n waiters of one mutex, each on a client of
// its own, with polls so far apart that only wake-ups move the lock.
type wakeOneRig struct {
	t       *testing.T
	name    string
	waiters string // the waiters' set
	count   *cmdcount.Hook
	grants  chan *baton.Lease
	first   *baton.Lease
}

// The holder's client has no pub/sub when holderNoPubSub.
func newWakeOneRig(t *testing.T, n int, base time.Duration, holderNoPubSub bool) *wakeOneRig {
	rdb := redisClient(t, redisAddr(t))
	r := &wakeOneRig{t: t, name: "wake-one", count: &cmdcount.Hook{}, grants: make(chan *baton.Lease, n+1)}
	rdb.AddHook(r.count)
	prefix := testPrefix(t, rdb)
	r.waiters = prefix + ":{" + r.name + "}:mutex:waiters"
	o := redislock.Options{TTL: 20 * time.Second, Prefix: prefix, Backoff: baton.Backoff{Base: base, Max: 5 * time.Second}}
	ho := o
	ho.NoPubSub = holderNoPubSub
	holder := newClient(t, rdb, ho)
	r.first = lock(t, holder, r.name)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	for range n {
		m, err := newClient(t, rdb, o).Mutex(r.name)
		if err != nil {
			t.Fatal(err)
		}
		go func() { // owner: the test; ends with ctx
			l, err := m.Lock(ctx)
			if err == nil {
				r.grants <- l
			}
		}()
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		in, err := redislock.Inspect(opCtx(t, 5*time.Second), holder, r.name)
		if err != nil {
			t.Fatal(err)
		}
		if len(in.Entries) == n+1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d entries after 10s, want a holder and %d waiters", len(in.Entries), n)
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond) // every client's channel subscribed
	return r
}

// handoff releases l and returns the next grant.
func (r *wakeOneRig) handoff(l *baton.Lease, within time.Duration) *baton.Lease {
	r.t.Helper()
	if err := l.Release(opCtx(r.t, 5*time.Second)); err != nil {
		r.t.Fatalf("Release = %v", err)
	}
	select {
	case g := <-r.grants:
		return g
	case <-time.After(within):
		r.t.Fatalf("no grant within %v of a release", within)
	}
	return nil
}

// TestWakeOne: a release wakes one waiter, not all of them; the requests
// of a handoff do not grow with the waiters.
func TestWakeOne(t *testing.T) {
	const n, handoffs = 12, 6
	r := newWakeOneRig(t, n, 500*time.Millisecond, false) // polls ≥ 3s apart (12 × 500ms, jittered)
	before := r.count.N()
	l := r.first
	for range handoffs {
		l = r.handoff(l, 2*time.Second)
	}
	// Per handoff: the release and the woken waiter's granted attempt
	// (and, rarely, a waiter's poll). Waking every waiter costs n + 1.
	if got := r.count.N() - before; got > 3*handoffs {
		t.Errorf("%d commands for %d handoffs among %d waiters, want ≤ %d", got, handoffs, n, 3*handoffs)
	}
}

// TestWakeOneByClientWithoutPubSub: a client without pub/sub cannot be
// woken one at a time, but its releases still wake other clients'
// waiters one at a time, or they would wait for their polls.
func TestWakeOneByClientWithoutPubSub(t *testing.T) {
	r := newWakeOneRig(t, 12, 500*time.Millisecond, true) // polls ≥ 3s apart
	start := time.Now()
	r.handoff(r.first, 2*time.Second)
	t.Logf("handoff from a client without pub/sub in %v", time.Since(start))
}

// TestWakeOneSkipsGoneClient: a release that picks the intent of a waiter
// whose client is gone (no subscriber on its channel) wakes the next one
// instead of leaving the lock to a poll.
func TestWakeOneSkipsGoneClient(t *testing.T) {
	r := newWakeOneRig(t, 1, 5*time.Second, false) // the live waiter polls after 0.5s at the soonest, then seconds apart
	rdb := redisClient(t, redisAddr(t))
	ctx := opCtx(t, 5*time.Second)
	now, err := rdb.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	// Older than the live waiter's intent (which expires in 20s).
	gone := engine.NewOwnerID() + ".1"
	if err := rdb.ZAdd(ctx, r.waiters, redis.Z{Score: float64(now.UnixMilli() + 10_000), Member: gone}).Err(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	r.handoff(r.first, 400*time.Millisecond)
	t.Logf("handoff past a gone waiter in %v", time.Since(start))
	left, err := rdb.ZRange(ctx, r.waiters, 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range left {
		if strings.HasPrefix(m, gone) {
			t.Errorf("waiters after the release = %v, want the gone waiter's intent removed", left)
		}
	}
}

// TestWakeOneAfterReconnect: a release published while a waiter's client
// had no pub/sub connection reached nobody; when the connection comes
// back the client wakes its waiters, who find the lock free long before
// their next poll.
func TestWakeOneAfterReconnect(t *testing.T) {
	const name = "wake-reconnect"
	rdb := redisClient(t, redisAddr(t))
	prdb, p := proxied(t, redisAddr(t))
	prefix := testPrefix(t, rdb)
	o := redislock.Options{TTL: 20 * time.Second, Prefix: prefix, Backoff: baton.Backoff{Base: 5 * time.Second, Max: 5 * time.Second}}
	holder := newClient(t, rdb, o)
	l := lock(t, holder, name)
	// A second intent that no release picks (no "<client>.<n>" id): the
	// waiter counts two waiters and polls 2.5s apart at the soonest.
	ctx := opCtx(t, 10*time.Second)
	now, err := rdb.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	waiters := prefix + ":{" + name + "}:mutex:waiters"
	if err := rdb.ZAdd(ctx, waiters, redis.Z{Score: float64(now.UnixMilli() + 60_000), Member: "plain"}).Err(); err != nil {
		t.Fatal(err)
	}
	m, err := newClient(t, prdb, o).Mutex(name)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() { // owner: the test; ends with ctx
		l, err := m.Lock(ctx)
		if err == nil {
			err = l.Release(context.Background())
		}
		got <- err
	}()
	for {
		n, err := rdb.ZCard(ctx, waiters).Result()
		if err != nil {
			t.Fatal(err)
		}
		if n == 2 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	recorded := time.Now()
	time.Sleep(200 * time.Millisecond) // its client's channel subscribed
	p.Refuse()
	if err := l.Release(opCtx(t, 5*time.Second)); err != nil {
		t.Fatalf("Release = %v", err)
	}
	time.Sleep(200 * time.Millisecond)
	if err := p.Accept(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("Lock = %v", err)
		}
		if d := time.Since(recorded); d > 2*time.Second {
			t.Errorf("granted %v after its intent was recorded, want well before its next poll (≥ 2.5s)", d)
		}
	case <-time.After(8 * time.Second):
		t.Fatal("no grant within 8s of the reconnection")
	}
}
