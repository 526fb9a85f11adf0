package zklock_test

import (
	"slices"
	"sync"
	"testing"

	"github.com/baton-go/baton/engine/queuekit"
	"github.com/baton-go/baton/zklock"
)

// TestSemaphoreSizeDisagreement: with a permit of a semaphore of 1 held, a
// second client that opens it with 1000 permits is granted (each client
// admits by its own N, as Curator's do) and is told, at that grant, that
// the held lease was taken with N=1 — once per lease, not at every
// acquire.
func TestSemaphoreSizeDisagreement(t *testing.T) {
	name := lockName(t)
	one, err := dial(t, "", zklock.Options{}).Semaphore(name, 1)
	if err != nil {
		t.Fatalf("Semaphore(%q, 1) = %v", name, err)
	}
	held, err := try(t, one.Acquire)
	if err != nil {
		t.Fatalf("N=1: Acquire = %v", err)
	}
	defer release(t, held)

	many, err := dial(t, "", zklock.Options{}).Semaphore(name, 1000)
	if err != nil {
		t.Fatalf("Semaphore(%q, 1000) = %v", name, err)
	}
	var (
		mu  sync.Mutex
		got []queuekit.Disagreement
	)
	many.OnDisagreement(func(d queuekit.Disagreement) {
		mu.Lock()
		got = append(got, d)
		mu.Unlock()
	})
	for i := range 2 {
		l, err := try(t, many.Acquire)
		if err != nil {
			t.Fatalf("N=1000: Acquire #%d with one permit of N=1 held = %v, want granted (own N admits)", i+1, err)
		}
		release(t, l)
	}
	want := []queuekit.Disagreement{{Name: name, Lease: held.Owner(), Permits: 1, Want: 1000}}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(got, want) {
		t.Errorf("disagreements = %+v, want %+v (the held lease's N, reported once)", got, want)
	}
}
