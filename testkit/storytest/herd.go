package storytest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/batontest/testenv"
	"github.com/baton-go/baton/zklock"
)

// Herd is the herd story: N waiters queue behind one holder of Name on a
// real ZooKeeper, all reported to Observer, and are granted in turn once
// the holder releases.
type Herd struct {
	Name     string
	N        int
	Observer baton.Observer
	// Waiting reads the adapter's count of acquires waiting on the
	// ZooKeeper mutex.
	Waiting func() int64
	// Held, when set, checks the adapter's figures once the holder holds,
	// before the herd comes.
	Held func()
	// Queued checks the adapter's figures once Waiting has read N and
	// then stayed 200ms: nobody can be granted while the holder holds.
	Queued func()
}

// Run tells the story; when it returns every lease has ended, and the
// test checks the adapter's final figures.
func (h Herd) Run(t *testing.T) {
	t.Helper()
	zk := testenv.ZK(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	mutex := func() interface {
		Lock(context.Context) (*baton.Lease, error)
	} {
		c, err := zklock.Dial(ctx, []string{zk}, zklock.Options{SessionTimeout: 10 * time.Second, Observer: h.Observer})
		if err != nil {
			t.Fatalf("Dial: %v", err)
		}
		t.Cleanup(func() { c.Close() })
		m, err := c.Mutex(h.Name)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	l, err := mutex().Lock(ctx)
	if err != nil {
		t.Fatalf("holder: Lock = %v", err)
	}
	if h.Held != nil {
		h.Held()
	}
	waiters := mutex()
	errs := make(chan error, h.N)
	var wg sync.WaitGroup
	for range h.N {
		wg.Add(1)
		go func() { // owner: this story, which waits for it
			defer wg.Done()
			wl, err := waiters.Lock(ctx)
			if err == nil {
				err = wl.Release(ctx)
			}
			errs <- err
		}()
	}
	h.awaitWaiting(t)
	time.Sleep(200 * time.Millisecond)
	h.Queued()
	if err := l.Release(ctx); err != nil {
		t.Fatalf("holder: Release = %v", err)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("waiter: %v", err)
		}
	}
}

// awaitWaiting polls Waiting until it reads N, failing after 30s.
func (h Herd) awaitWaiting(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		got := h.Waiting()
		if got == int64(h.N) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting acquires = %d after 30s, want %d", got, h.N)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
