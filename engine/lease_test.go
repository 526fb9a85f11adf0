package engine_test

import (
	"context"
	"errors"
	"testing"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/engine"
)

func TestLeaseLifecycle(t *testing.T) {
	ctx := context.Background()
	key := new(int)
	l, ctl := engine.NewLease(ctx, engine.Grant{Name: "n", Engine: "mem", Token: 7, Owner: "o", Key: key})
	if ctl.Lease() != l || l.State() != baton.Held || l.Token() != 7 || l.Owner() != "o" {
		t.Fatalf("NewLease: %v %d %q", l.State(), l.Token(), l.Owner())
	}
	ctl.Suspend()
	if l.State() != baton.Suspended {
		t.Fatalf("after Suspend: %v", l.State())
	}
	ctl.Resume()
	if l.State() != baton.Held {
		t.Fatalf("after Resume: %v", l.State())
	}
	if got, ok := engine.Holding(l.Context(), key); !ok || got != l {
		t.Fatalf("Holding = %p, %v; want the lease", got, ok)
	}
	if got, err := engine.Reenter(l.Context(), key); err != nil || got != l || l.Holds() != 2 {
		t.Fatalf("Reenter = %p, %v (holds %d); want the lease, 2 holds", got, err, l.Holds())
	}
	if got, err := engine.Reenter(ctx, key); err != nil || got != nil {
		t.Fatalf("Reenter without a lease = %p, %v; want nil, nil", got, err)
	}
	ld := engine.NewLeader(l, "cand")
	if ld.Epoch() != 7 || ld.ID() != "cand" || ld.Lease() != l {
		t.Fatalf("NewLeader: epoch %d id %q", ld.Epoch(), ld.ID())
	}
	if !ctl.LoseAhead(errors.New("session expired"), 0) || l.State() != baton.Lost || !errors.Is(l.Err(), baton.ErrLost) {
		t.Fatalf("LoseAhead: %v %v", l.State(), l.Err())
	}
	if ctl.Lose(nil) {
		t.Error("Lose on a lost lease reported that it ended it")
	}
	if _, err := engine.Reenter(l.Context(), key); !errors.Is(err, baton.ErrLost) {
		t.Errorf("Reenter of a lost lease: %v, want ErrLost", err)
	}
}

// TestNewLeaseAllocations: a grant costs the lease, its context and the
// context's cancel func, through package engine as it did in the root.
func TestNewLeaseAllocations(t *testing.T) {
	ctx := context.Background()
	g := engine.Grant{Name: "n", Engine: "mem", Token: 1, Owner: "o"}
	n := testing.AllocsPerRun(100, func() { engine.NewLease(ctx, g) })
	if n != 3 {
		t.Errorf("engine.NewLease: %v allocations, want 3 (the lease, its context, its cancel func), as before package engine", n)
	}
}
