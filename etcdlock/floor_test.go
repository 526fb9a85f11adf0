package etcdlock_test

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/etcdlock"
)

// TestTokenFloorRule checks the token floor rule on etcd: a client with
// TokenFloor F is granted the raw token (its key's create revision) plus
// F, on the same name where a client without a floor is granted the raw
// token itself; a floor whose sum would pass 2^64 is refused and leaves
// no key behind.
func TestTokenFloorRule(t *testing.T) {
	const floor = 1 << 50
	name := uniq(t)
	plain := newClient(t, etcdlock.Options{})
	floored := newClient(t, etcdlock.Options{TokenFloor: floor})
	raw := rawClient(t, "")
	createRev := func(l *baton.Lease) uint64 {
		t.Helper()
		resp, err := raw.Get(context.Background(), keyOf(l))
		if err != nil || len(resp.Kvs) != 1 {
			t.Fatalf("Get(%q) = %v, %v; want the holder's key", keyOf(l), resp, err)
		}
		return uint64(resp.Kvs[0].CreateRevision)
	}

	lp := lock(t, mutex(t, plain, name), name)
	if rev := createRev(lp); lp.Token() != rev {
		t.Errorf("Token() without a floor = %d, want the create revision %d", lp.Token(), rev)
	}
	release(t, lp)
	lf := lock(t, mutex(t, floored, name), name)
	if rev := createRev(lf); lf.Token() != rev+floor {
		t.Errorf("Token() with floor %d = %d, want create revision %d + floor = %d", uint64(floor), lf.Token(), rev, rev+floor)
	}
	release(t, lf)

	// Every create revision is at least 2: revision 1 is the empty store.
	huge := newClient(t, etcdlock.Options{TokenFloor: math.MaxUint64 - 1})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if l, err := mutex(t, huge, name).Lock(ctx); !errors.Is(err, baton.ErrInvalidOption) {
		t.Fatalf("Lock(%q) with a floor near 2^64 = %v, %v; want an error wrapping %v", name, l, err, baton.ErrInvalidOption)
	}
	if !eventually(3*time.Second, func() bool { return len(entries(t, plain, name)) == 0 }) {
		t.Errorf("Entries(%q) after the refused attempt = %q, want none", name, entries(t, plain, name))
	}
}
