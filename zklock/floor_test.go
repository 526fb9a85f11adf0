package zklock_test

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/zklock"
)

// TestTokenFloorRule checks the token floor rule on ZooKeeper: a client
// with TokenFloor F is granted the raw token (the directory's Pzxid at the
// granting read) plus F, on the same name where a client without a floor
// is granted the raw token itself; a floor whose sum would pass 2^64 is
// refused and leaves no entry behind.
func TestTokenFloorRule(t *testing.T) {
	const floor = 1 << 50
	name := lockName(t)
	plain := dial(t, "", zklock.Options{})
	floored := dial(t, "", zklock.Options{TokenFloor: floor})

	// rawNow is the directory's Pzxid while a lease is held: nothing has
	// changed the directory since the holder's granting read.
	rawNow := func() uint64 {
		t.Helper()
		dir, _ := plain.Dir(name)
		_, st, err := plain.Conn().Exists(dir)
		if err != nil {
			t.Fatalf("Exists(%s) = %v", dir, err)
		}
		return uint64(st.Pzxid)
	}
	lp := lock(t, mutex(t, plain, name))
	if raw := rawNow(); lp.Token() != raw {
		t.Errorf("Token() without a floor = %d, want the raw Pzxid %d", lp.Token(), raw)
	}
	release(t, lp)
	lf := lock(t, mutex(t, floored, name))
	if raw := rawNow(); lf.Token() != raw+floor {
		t.Errorf("Token() with floor %d = %d, want raw %d + floor = %d", uint64(floor), lf.Token(), raw, raw+floor)
	}
	if lf.Token() <= lp.Token() {
		t.Errorf("Token() with a floor = %d, want > the earlier %d", lf.Token(), lp.Token())
	}
	release(t, lf)

	huge := dial(t, "", zklock.Options{TokenFloor: math.MaxUint64 - 1})
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if l, err := mutex(t, huge, name).Lock(ctx); !errors.Is(err, baton.ErrInvalidOption) {
		t.Fatalf("Lock(%q) with a floor near 2^64 = %v, %v; want an error wrapping %v", name, l, err, baton.ErrInvalidOption)
	}
	if b, err := huge.TokenBound(ctx, name); !errors.Is(err, baton.ErrInvalidOption) {
		t.Errorf("TokenBound(%q) with a floor near 2^64 = %d, %v; want an error wrapping %v", name, b, err, baton.ErrInvalidOption)
	}
	eventually(t, 3*time.Second, "refused attempt's entry removed", func() bool { return len(entries(t, plain, name)) == 0 })
}
