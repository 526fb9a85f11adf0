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

// tokenRun builds the interleaving of row 7's control deterministically
// with fault proxies (which client reaches which nodes) on a fresh prefix,
// and returns A's and B's tokens: grants P1 on nodes {0,1,3} and P2 on
// {0,1,4} leave node 2's counter far behind nodes 0 and 1; A is granted on
// {0,1,2} and releases; B, starting after A's release, is granted on
// {2,3,4}. Only node 2 is common to A and B. mutate, if set, alters A's
// client (the control).
func tokenRun(t *testing.T, mutate func(*baton.Client)) (tokA, tokB uint64) {
	t.Helper()
	addrs := testenv.Redlock(t)
	prefix := redlocktest.Prefix(t, addrs)
	name := "row07/tokens"
	grantOn := func(who string, reach []int, mutate func(*baton.Client)) *baton.Lease {
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
		return redlocktest.Lock(t, c.Client, name)
	}
	for _, p := range []struct {
		who   string
		reach []int
	}{{"P1", []int{0, 1, 3}}, {"P2", []int{0, 1, 4}}} {
		redlocktest.Release(t, grantOn(p.who, p.reach, nil))
	}
	la := grantOn("A", []int{0, 1, 2}, mutate)
	redlocktest.Release(t, la)
	lb := grantOn("B", []int{2, 3, 4}, nil)
	redlocktest.Release(t, lb)
	return la.Token(), lb.Token()
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
// the quorum token increases (I2) because of the write-back, and controls
// whose write-back is skipped or misdirected break I2 on the same
// interleaving.
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
			tokA, tokB := tokenRun(t, tc.mutate)
			// B's grant follows A's release: I2 holds iff B's token
			// is larger (the drill's token checker on this two-grant
			// history says no more).
			increased := tokB > tokA
			t.Logf("A's token %d, then B's %d", tokA, tokB)
			switch {
			case tc.broken && increased:
				t.Errorf("control: B's token %d > A's %d: the control did not break I2, so the test could not fail", tokB, tokA)
			case !tc.broken && !increased:
				t.Errorf("I2 broken with the write-back: B's token %d ≤ A's %d", tokB, tokA)
			}
		})
	}
}
