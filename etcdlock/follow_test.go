package etcdlock_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/batontest/heldtest"
	"github.com/baton-go/baton/engine/queuekit/drillhook"
	"github.com/baton-go/baton/etcdlock"
)

// TestHeldLeasesFollowSession holds many locks of different names on one
// client: they share one etcd lease (a lease may have one key in each
// directory) and cost no goroutine each, and every one still follows the
// lease: Suspended in a partition, Held again when it heals, Lost before
// the server can expire the lease. A lock granted while the lease is
// already Suspended is Suspended too, not left Held until the next change.
func TestHeldLeasesFollowSession(t *testing.T) {
	const n, ttl = 200, 3 * time.Second
	p := proxy(t)
	c := newClientOn(t, rawClient(t, p.Addr), etcdlock.Options{TTL: ttl})
	name := uniq(t)
	leases := []*baton.Lease{lock(t, mutex(t, c, name+"/0"), name+"/0")}
	g1 := heldtest.SettledGoroutines()
	for i := 1; i < n; i++ {
		ni := fmt.Sprintf("%s/%d", name, i)
		leases = append(leases, lock(t, mutex(t, c, ni), ni))
	}
	// A few goroutines of requests and keepalives may come and go; one per
	// lock would be n-1 more.
	if gN := heldtest.SettledGoroutines(); gN > g1+5 {
		t.Errorf("goroutines with %d locks = %d, with one %d: want independent of the locks held", n, gN, g1)
	}
	id := leaseOf(t, keyOf(leases[0]))
	for _, l := range leases {
		if got := leaseOf(t, keyOf(l)); got != id {
			t.Fatalf("lock %q on lease %x, want the first lock's %x", l.Name(), int64(got), int64(id))
		}
	}

	// The grant completes after the partition made the lease Suspended.
	cut := false
	hooks := &drillhook.Hooks{BeforeReturn: func() {
		if err := p.Blackhole(""); err != nil {
			t.Errorf("Blackhole = %v", err)
		}
		cut = true
		if !eventually(ttl, func() bool { return leases[0].State() == baton.Suspended }) {
			t.Errorf("first lock still %v %v after the partition", leases[0].State(), ttl)
		}
	}}
	t.Cleanup(p.Heal)
	ctx, cancel := context.WithTimeout(drillhook.With(t.Context(), hooks), 10*time.Second)
	defer cancel()
	late, err := mutex(t, c, name+"/late").Lock(ctx)
	if err != nil {
		t.Fatalf("Lock with the partition before the return = %v", err)
	}
	if !cut {
		t.Fatal("BeforeReturn did not run")
	}
	leases = append(leases, late)
	if !eventually(ttl/4, func() bool { return late.State() == baton.Suspended }) {
		t.Fatalf("the lock granted during the partition is %v, want %v", late.State(), baton.Suspended)
	}
	if !eventually(ttl, heldtest.AllIn(leases, baton.Suspended)) {
		t.Fatalf("not all locks %v in the partition", baton.Suspended)
	}
	p.Heal()
	if !eventually(ttl, heldtest.AllIn(leases, baton.Held)) {
		t.Fatalf("not all locks %v after healing", baton.Held)
	}

	for _, l := range leases[:n/2] {
		release(t, l)
	}
	leases = leases[n/2:]
	start := time.Now()
	if err := p.Blackhole(""); err != nil {
		t.Fatalf("Blackhole = %v", err)
	}
	if !eventually(2*ttl, heldtest.AllIn(leases, baton.Lost)) {
		t.Fatalf("not all locks %v in a partition longer than the TTL", baton.Lost)
	}
	if d := time.Since(start); d > ttl {
		t.Errorf("all %d locks lost %v after the partition, want before the %v TTL", len(leases), d, ttl)
	}
}

// TestLockLoopStartsNoGoroutine: a client taking and releasing a lock in a
// loop keeps its lease's follower between grants (queuekit's lingerFor)
// rather than starting one at every grant, as it did: one goroutine per
// lock+unlock, where concurrency.Mutex starts none.
func TestLockLoopStartsNoGoroutine(t *testing.T) {
	heldtest.CheckLockLoop(t, context.Background(), mutex(t, newClient(t, etcdlock.Options{}), uniq(t)))
}
