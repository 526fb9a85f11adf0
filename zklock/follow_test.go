package zklock_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/batontest/heldtest"
	"github.com/baton-go/baton/batontest/testenv"
	"github.com/baton-go/baton/engine/queuekit/drillhook"
	"github.com/baton-go/baton/zklock"
)

// TestHeldLeasesFollowSession holds many leases on one session: they cost
// no goroutine each, and every one still follows the session: Suspended in
// a partition, Held again when it heals, Lost before the session can
// expire. A lease granted while the session is already Suspended is
// Suspended too, not left Held until the next change.
func TestHeldLeasesFollowSession(t *testing.T) {
	const n, timeout = 200, 3 * time.Second
	p := proxy(t)
	a := dial(t, p.Addr, zklock.Options{SessionTimeout: timeout})
	name := lockName(t)
	leases := []*baton.Lease{lock(t, mutex(t, a, name+"/0"))}
	g1 := heldtest.SettledGoroutines()
	for i := 1; i < n; i++ {
		leases = append(leases, lock(t, mutex(t, a, fmt.Sprintf("%s/%d", name, i))))
	}
	// A few goroutines of calls and pings may come and go; one per lease
	// would be n-1 more.
	if gN := heldtest.SettledGoroutines(); gN > g1+5 {
		t.Errorf("goroutines with %d leases = %d, with one %d: want independent of the leases held", n, gN, g1)
	}
	sid := a.SessionID()

	// The grant completes after the partition made the session Suspended.
	cut := false
	hooks := &drillhook.Hooks{BeforeReturn: func() {
		if err := p.Blackhole(""); err != nil {
			t.Errorf("Blackhole = %v", err)
		}
		cut = true
		eventually(t, timeout, "first lease suspended", func() bool { return leases[0].State() == baton.Suspended })
	}}
	ctx, cancel := context.WithTimeout(drillhook.With(t.Context(), hooks), 10*time.Second)
	defer cancel()
	late, err := mutex(t, a, name+"/late").Lock(ctx)
	if err != nil {
		t.Fatalf("Lock with the partition before the return = %v", err)
	}
	if !cut {
		t.Fatal("BeforeReturn did not run")
	}
	leases = append(leases, late)
	eventually(t, timeout/4, "the late grant suspended", func() bool { return late.State() == baton.Suspended })
	eventually(t, timeout, "all leases suspended", heldtest.AllIn(leases, baton.Suspended))
	p.Heal()
	eventually(t, timeout, "all leases held after healing", heldtest.AllIn(leases, baton.Held))
	if got := a.SessionID(); got != sid {
		t.Fatalf("session 0x%x after healing, want the same 0x%x", got, sid)
	}

	for _, l := range leases[:n/2] {
		release(t, l)
	}
	leases = leases[n/2:]
	start := time.Now()
	if err := p.Blackhole(""); err != nil {
		t.Fatalf("Blackhole = %v", err)
	}
	eventually(t, 2*timeout, "all leases lost", heldtest.AllIn(leases, baton.Lost))
	if d := time.Since(start); d > timeout {
		t.Errorf("all %d leases lost %v after the partition, want before the %v session timeout", len(leases), d, timeout)
	}
}

// TestLockLoopStartsNoGoroutine: a client taking and releasing a lock in a
// loop keeps its session's follower between grants (queuekit's lingerFor)
// rather than starting one at every grant, as it did: one goroutine per
// lock+unlock, where zk.Lock starts none. Under a context that can end,
// each call runs on a goroutine of its own, to leave when the context ends
// (see op): the session's workers keep theirs between calls (gopool),
// where every call started one, three per lock+unlock.
func TestLockLoopStartsNoGoroutine(t *testing.T) {
	m := mutex(t, dial(t, testenv.ZK(t), zklock.Options{}), lockName(t))
	deadline, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for what, ctx := range map[string]context.Context{"NoDeadline": context.Background(), "Deadline": deadline} {
		t.Run(what, func(t *testing.T) { heldtest.CheckLockLoop(t, ctx, m) })
	}
}
