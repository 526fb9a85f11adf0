// Row 7's tests that judge real histories with the drill's checkers
// (early expiry, a wiped node) live in the drill module
// (drill/internal/redlockrows), which alone requires the checkers'
// dependencies.
package redlock_test

import (
	"testing"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/batontest/testenv"
	"github.com/baton-go/baton/redlock"
	"github.com/baton-go/baton/redlock/redlocktest"
)

// tokenRun builds row 7's state deterministically on a fresh prefix, and
// returns A's and B's tokens and the write-backs A's client sent: nodes 0
// and 1 hold counters 200 rounds ahead of nodes 2–4 (set by hand, as the
// recovery's raise would leave them; in use, a node falls behind when it
// misses grants); A is granted on {0,1,2} with fault proxies cutting the
// rest, and releases; B, starting after A's release, is granted on
// {2,3,4}. Only node 2 is common to A and B, and only A's write-back to
// node 2 puts its counter above A's token. mutate, if set, alters A's
// client (the control).
func tokenRun(t *testing.T, mutate func(*baton.Client)) (tokA, tokB, writeBacks uint64) {
	t.Helper()
	addrs := testenv.Redlock(t)
	prefix := redlocktest.Prefix(t, addrs)
	name := "row07/tokens"
	nodes := redlocktest.Clients(t, addrs)
	for i := range 2 {
		ahead := 200*len(addrs) + i
		if err := nodes[i].Set(redlocktest.OpCtx(t, 5*time.Second), prefix+"counter", ahead, 0).Err(); err != nil {
			t.Fatalf("node %d: SET counter %d = %v", i, ahead, err)
		}
	}
	grantOn := func(who string, reach []int, mutate func(*baton.Client)) (*baton.Lease, *redlock.Client) {
		c := redlocktest.NewProxied(t, addrs, prefix, redlock.Options{})
		if mutate != nil {
			mutate(c.Client)
		}
		if err := raw(c).Verify(redlocktest.OpCtx(t, 5*time.Second)); err != nil {
			t.Fatalf("%s: Verify() = %v", who, err)
		}
		var cut []int
		for i := range addrs {
			if !contains(reach, i) {
				cut = append(cut, i)
			}
		}
		c.Blackhole(t, cut...)
		return redlocktest.Lock(t, c.Client, name), raw(c)
	}
	la, ca := grantOn("A", []int{0, 1, 2}, mutate)
	redlocktest.Release(t, la)
	lb, _ := grantOn("B", []int{2, 3, 4}, nil)
	redlocktest.Release(t, lb)
	return la.Token(), lb.Token(), ca.Stats().WriteBacks
}

func contains(xs []int, x int) bool {
	for _, y := range xs {
		if x == y {
			return true
		}
	}
	return false
}

// TestRow07WriteBack is row 7's token half: across non-overlapping grants
// the quorum token increases (I2) because of the write-back to a lagging
// node, and controls whose write-back is skipped or misdirected break I2
// from the same state.
func TestRow07WriteBack(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*baton.Client)
		broken bool
	}{
		{"Fenced", nil, false},
		{"ControlSkipped", redlock.SkipWriteBack, true},
		{"ControlMisdirected", redlock.MisdirectWriteBack, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tokA, tokB, wb := tokenRun(t, tc.mutate)
			// B's grant follows A's release: I2 holds iff B's token
			// is larger (the drill's token checker on this two-grant
			// history says no more).
			increased := tokB > tokA
			t.Logf("A's token %d, then B's %d; A's write-backs %d", tokA, tokB, wb)
			switch {
			case !tc.broken && wb != 1:
				t.Errorf("A's write-backs = %d, want 1 (node 2, the one lagging node of its majority)", wb)
			case tc.broken && increased:
				t.Errorf("control: B's token %d > A's %d: the control did not break I2, so the test could not fail", tokB, tokA)
			case !tc.broken && !increased:
				t.Errorf("I2 broken with the write-back: B's token %d ≤ A's %d", tokB, tokA)
			}
		})
	}
}
