package zklock_test

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/zklock"
)

// TestCancelledWaitersLeaveNothing: 200 readers of one client wait behind
// a writer, all watching the writer's entry. Cancelling them ends every
// goroutine they started within a second while the watched entry stays
// untouched, and the session keeps one shared watch on it, not 200. A
// reader that comes later reuses that watch and is woken by the writer's
// release.
func TestCancelledWaitersLeaveNothing(t *testing.T) {
	const waiters = 200
	holder, c := dial(t, "", zklock.Options{}), dial(t, "", zklock.Options{SessionTimeout: 10 * time.Second})
	name := lockName(t)
	hw, _ := holder.RWMutex(name)
	w, err := try(t, hw.Lock)
	if err != nil {
		t.Fatalf("Lock = %v", err)
	}
	rw, _ := c.RWMutex(name)
	baseline := runtime.NumGoroutine()

	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	errs := make(chan error, waiters)
	for range waiters {
		wg.Go(func() {
			l, err := rw.RLock(ctx)
			if l != nil {
				_ = l.Release(context.Background())
			}
			errs <- err
		})
	}
	deadline := time.Now().Add(20 * time.Second)
	for len(entries(t, c, name)) < waiters+1 || c.Watches() != 1 {
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("after 20s: %d entries, %d watches; want %d queued readers on one watch", len(entries(t, c, name)), c.Watches(), waiters)
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond) // the last readers reach their wait
	cancel()
	wg.Wait()
	close(errs)
	for err := range errs {
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("RLock after cancel = %v, want context.Canceled", err)
		}
	}
	var now int
	for end := time.Now().Add(time.Second); ; time.Sleep(10 * time.Millisecond) {
		if now = runtime.NumGoroutine(); now <= baseline || time.Now().After(end) {
			break
		}
	}
	if now > baseline {
		buf := make([]byte, 1<<20)
		t.Fatalf("goroutines 1s after cancelling %d waiters = %d, want ≤ %d (before they started)\n%s",
			waiters, now, baseline, buf[:runtime.Stack(buf, true)])
	}
	if st, _ := w.Observe(); st != baton.Held {
		t.Fatalf("writer's lease = %v, want Held: the watched entry must stay untouched", st)
	}
	if n := c.Watches(); n != 1 {
		t.Errorf("watches kept after the cancellations = %d, want 1 (shared, not one per waiter)", n)
	}

	late := make(chan error, 1)
	go func() {
		l, err := try(t, rw.RLock)
		if l != nil {
			_ = l.Release(context.Background())
		}
		late <- err
	}()
	time.Sleep(200 * time.Millisecond)
	release(t, w)
	select {
	case err := <-late:
		if err != nil {
			t.Fatalf("RLock once the writer released = %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a reader waiting on the shared watch was not woken by the writer's release")
	}
}
