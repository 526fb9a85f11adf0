package memlock_test

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/memlock"
)

// TestTokenFloorNoWrap: with TokenFloor near 2^64, the grant whose sum is
// exactly MaxUint64 is made; the next one, whose sum would wrap to a small
// token, fails with ErrInvalidOption and grants nothing.
func TestTokenFloorNoWrap(t *testing.T) {
	srv, _ := newServer(t, memlock.Options{TokenFloor: math.MaxUint64 - 1})
	a := srv.Client("a")
	l := lock(t, a, "edge") // create: raw 1
	if l.Token() != math.MaxUint64 {
		t.Errorf("token with raw 1 and TokenFloor MaxUint64-1 = %d, want MaxUint64", l.Token())
	}
	release(t, l) // delete: raw 2
	m, _ := a.Mutex("edge")
	ctx, cancel := context.WithTimeout(context.Background(), hang)
	defer cancel()
	if l, err := m.TryLock(ctx); !errors.Is(err, baton.ErrInvalidOption) {
		t.Errorf("TryLock with raw 3 and TokenFloor MaxUint64-1 = (lease %v, %v), want ErrInvalidOption", l != nil, err)
	}
}
