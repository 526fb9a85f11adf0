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

// TestNewLeaseAllocations: a grant costs the lease alone; its context and
// the context's cancel func come with the first Context, and a lease
// that has ended by then gets a context already cancelled with its cause.
func TestNewLeaseAllocations(t *testing.T) {
	ctx := context.Background()
	g := engine.Grant{Name: "n", Engine: "mem", Token: 1, Owner: "o"}
	n := testing.AllocsPerRun(100, func() { engine.NewLease(ctx, g) })
	if n != 1 {
		t.Errorf("engine.NewLease: %v allocations, want 1 (the lease)", n)
	}
	if n := testing.AllocsPerRun(100, func() {
		l, _ := engine.NewLease(ctx, g)
		_ = l.Context()
	}); n != 3 {
		t.Errorf("engine.NewLease + Context: %v allocations, want 3 (the lease, its context, its cancel func)", n)
	}
	l, ctl := engine.NewLease(ctx, g)
	cause := errors.New("gone")
	ctl.Lose(cause)
	select {
	case <-l.Done():
	default:
		t.Fatal("Done of a lease lost before its first Context is not closed")
	}
	if c := context.Cause(l.Context()); !errors.Is(c, cause) || !errors.Is(c, baton.ErrLost) {
		t.Errorf("context.Cause = %v, want the loss (wrapping %v and baton.ErrLost)", c, cause)
	}
}

// TestLeaseContextEitherOrder: a lease's context ends with the lease's
// cause whether it was asked for before the end or only after it.
func TestLeaseContextEitherOrder(t *testing.T) {
	released := func(context.Context) error { return nil }
	for _, before := range []bool{true, false} {
		for _, lose := range []bool{true, false} {
			l, ctl := engine.NewLease(context.Background(), engine.Grant{Name: "n", Engine: "mem", Token: 1, Owner: "o", Release: released})
			var early context.Context
			if before {
				early = l.Context()
				if early.Err() != nil {
					t.Fatalf("before=%v lose=%v: context of a held lease done: %v", before, lose, early.Err())
				}
			}
			want := baton.ErrReleased
			if lose {
				ctl.Lose(errors.New("session expired"))
				want = baton.ErrLost
			} else if err := l.Release(context.Background()); err != nil {
				t.Fatalf("Release = %v", err)
			}
			ctx := l.Context()
			if before && ctx != early {
				t.Errorf("before=%v lose=%v: Context changed across the end", before, lose)
			}
			select {
			case <-l.Done():
			default:
				t.Errorf("before=%v lose=%v: Done open after the end", before, lose)
			}
			if cause := context.Cause(ctx); !errors.Is(cause, want) {
				t.Errorf("before=%v lose=%v: Cause = %v, want %v", before, lose, cause, want)
			}
			if got, ok := baton.LeaseFrom(ctx); !ok || got != l {
				t.Errorf("before=%v lose=%v: LeaseFrom(Context()) = %p, %v; want the lease", before, lose, got, ok)
			}
		}
	}
}
