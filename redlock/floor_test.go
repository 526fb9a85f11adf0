package redlock_test

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/batontest/testenv"
	"github.com/baton-go/baton/redlock"
	"github.com/baton-go/baton/redlock/redlocktest"
)

// TestTokenFloor: a client with TokenFloor F hands out the quorum token
// + F: above F, above the raw tokens before it, and the nodes' counters
// are not raised (a client without the floor goes on below F). A floor
// that would overflow uint64 fails the acquire with
// baton.ErrInvalidOption and leaves the lock free.
func TestTokenFloor(t *testing.T) {
	addrs := testenv.Redlock(t)
	prefix := redlocktest.Prefix(t, addrs)
	const floor = uint64(1_000_000_000_000)
	plain := redlocktest.NewClient(t, addrs, prefix, redlock.Options{})
	floored := redlocktest.NewClient(t, addrs, prefix, redlock.Options{TokenFloor: floor})
	name := "floor"
	var got [3]uint64
	for i, c := range []*baton.Client{plain, floored, plain} {
		l := redlocktest.Lock(t, c, name)
		got[i] = l.Token()
		redlocktest.Release(t, l)
	}
	if raw := got[1] - floor; got[1] <= floor || raw <= got[0] {
		t.Errorf("token with TokenFloor %d after raw token %d = %d, want raw + floor with raw > %d", floor, got[0], got[1], got[0])
	}
	if got[2] >= floor || got[2] <= got[1]-floor {
		t.Errorf("token without a floor after the floored grant (raw %d) = %d, want in (%d, %d): the counters are not raised", got[1]-floor, got[2], got[1]-floor, floor)
	}

	over := redlocktest.NewClient(t, addrs, prefix, redlock.Options{TokenFloor: math.MaxUint64})
	if l, err := redlocktest.Mutex(t, over, name).TryLock(redlocktest.OpCtx(t, 5*time.Second)); !errors.Is(err, baton.ErrInvalidOption) {
		t.Errorf("TryLock with TokenFloor MaxUint64 = %v, %v, want an error wrapping %v", l, err, baton.ErrInvalidOption)
	}
	// The refused grant is released in the background, well within the
	// TTL.
	l, err := redlocktest.Mutex(t, plain, name).Lock(redlocktest.OpCtx(t, redlock.DefaultTTL/3))
	if err != nil {
		t.Fatalf("Lock after the overflowing grant = %v, want it released", err)
	}
	redlocktest.Release(t, l)
}
