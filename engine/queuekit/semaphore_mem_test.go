package queuekit_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/engine/queuekit"
	"github.com/baton-go/baton/memlock"
)

// TestMemSemaphorePermits: N holders at most; the next waits and is
// granted when a permit comes back; TryAcquire refuses while all are
// taken; the guard mutex is never left held.
func TestMemSemaphorePermits(t *testing.T) {
	const n = 2
	srv, _ := memServer(t)
	sem := func(name string) *baton.Semaphore {
		s, err := srv.Client(name).Semaphore("pool", n)
		if err != nil {
			t.Fatalf("Semaphore = %v", err)
		}
		return s
	}
	la := memStart(t, sem("a").Acquire, nil).granted(t, "a: Acquire")
	lb := memStart(t, sem("b").Acquire, nil).granted(t, "b: Acquire")
	wc := memStart(t, sem("c").Acquire, nil)
	memQueued(t, srv, "pool/leases", "a", "b", "c")
	wc.waiting(t, "c: Acquire with both permits taken")
	// c holds the guard while it waits for a permit, so d's TryAcquire
	// queues behind it for the guard: give c its permit first.
	memRelease(t, la)
	lc := wc.granted(t, "c: Acquire after a's release")
	memOwners(t, srv, "pool/leases", "b", "c")
	memOwners(t, srv, "pool/locks")

	if _, err := sem("d").TryAcquire(context.Background()); !errors.Is(err, baton.ErrNotAcquired) {
		t.Errorf("d: TryAcquire with both permits taken = %v, want an error wrapping %v", err, baton.ErrNotAcquired)
	}
	memOwners(t, srv, "pool/leases", "b", "c")
	memOwners(t, srv, "pool/locks")
	memRelease(t, lb)
	memRelease(t, lc)
	memOwners(t, srv, "pool/leases")
}

// TestMemSemaphoreDisagreement: a client configured with a smaller N finds
// more leases than it allows and reports each lease taken with another N,
// once.
func TestMemSemaphoreDisagreement(t *testing.T) {
	srv, _ := memServer(t)
	var held []*baton.Lease
	for _, name := range []string{"a", "b"} {
		s, _ := srv.Client(name).Semaphore("pool", 2)
		held = append(held, memStart(t, s.Acquire, nil).granted(t, name+": Acquire"))
	}
	small, _ := srv.Client("small").Semaphore("pool", 1)
	var (
		mu  sync.Mutex
		got []queuekit.Disagreement
	)
	qs, ok := baton.As[*queuekit.Semaphore](small)
	if !ok {
		t.Fatal("baton.As[*queuekit.Semaphore] of a memlock semaphore failed")
	}
	qs.OnDisagreement(func(d queuekit.Disagreement) {
		mu.Lock()
		got = append(got, d)
		mu.Unlock()
	})
	for range 2 {
		if _, err := small.TryAcquire(context.Background()); !errors.Is(err, baton.ErrNotAcquired) {
			t.Errorf("small: TryAcquire = %v, want an error wrapping %v", err, baton.ErrNotAcquired)
		}
	}
	want := []queuekit.Disagreement{
		{Name: "pool", Lease: "pool/leases/lease-0000000001", Permits: 2, Want: 1},
		{Name: "pool", Lease: "pool/leases/lease-0000000002", Permits: 2, Want: 1},
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(got, want) {
		t.Errorf("disagreements = %v, want %v", got, want)
	}
	for _, l := range held {
		memRelease(t, l)
	}
}

// TestMemSemaphoreLostGuardRelease: when the response to the guard's
// release is lost, the guard is handed to the session's cleanup, the
// acquire succeeds, and the next acquirer is not blocked by the guard.
func TestMemSemaphoreLostGuardRelease(t *testing.T) {
	srv, _ := memServer(t)
	a := srv.Client("a")
	sa, _ := a.Semaphore("pool", 1)
	sb, _ := srv.Client("b").Semaphore("pool", 1)
	memCtl(a).LoseResponse(memlock.Delete)
	la := memStart(t, sa.Acquire, nil).granted(t, "a: Acquire")
	memOwners(t, srv, "pool/locks")
	if _, err := sb.TryAcquire(context.Background()); !errors.Is(err, baton.ErrNotAcquired) {
		t.Errorf("b: TryAcquire = %v, want an error wrapping %v", err, baton.ErrNotAcquired)
	}
	memRelease(t, la)
	lb := memStart(t, sb.Acquire, nil).granted(t, "b: Acquire")
	memRelease(t, lb)
}
