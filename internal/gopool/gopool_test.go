package gopool

import (
	"runtime/metrics"
	"sync"
	"testing"
	"time"
)

// started reads how many goroutines the process has started.
func started() uint64 {
	s := []metrics.Sample{{Name: "/sched/goroutines-created:goroutines"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// waiting returns how many workers of p wait for a call.
func waiting(p *Pool) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.idle
}

// await polls cond for up to a second.
func await(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within a second", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestReuse: calls made one after the other run on the waiting workers,
// without starting goroutines. The linger is long here: on a loaded host
// the test may not run again within the default's 100 ms, and the worker
// would rightly have returned.
//
// A worker counts itself waiting just before it waits: a call made in
// between finds nobody receiving and starts a worker (which then waits
// too). That is rare and harmless, but on a loaded CI host it happened:
// the test then waited for exactly one waiting worker, and failed. So it
// allows a few such starts, where no reuse would start 100.
func TestReuse(t *testing.T) {
	done := make(chan struct{})
	p := New(done, 4)
	p.linger = time.Hour
	ran := make(chan struct{})
	p.Go(func() { ran <- struct{}{} })
	<-ran
	await(t, "the first worker waits", func() bool { return waiting(p) == 1 })
	g0 := started()
	for range 100 {
		p.Go(func() { ran <- struct{}{} })
		<-ran
		await(t, "a worker waits again", func() bool { return waiting(p) >= 1 })
	}
	if g := started() - g0; g > 3 {
		t.Errorf("100 calls one after the other started %d goroutines, want at most 3", g)
	}
	close(done)
	p.Wait()
}

// TestLinger: a worker returns once it has waited the linger without a
// call, and Wait then returns without done being closed.
func TestLinger(t *testing.T) {
	done := make(chan struct{})
	defer close(done)
	p := New(done, 4)
	ran := make(chan struct{})
	p.Go(func() { close(ran) })
	<-ran
	p.Wait() // the worker returns by itself, after Linger
	if w := waiting(p); w != 0 {
		t.Errorf("%d workers wait after the linger, want 0", w)
	}
}

// TestMaxIdle: of twelve workers whose calls end together, at most MaxIdle
// wait; closing done stops them, and Wait returns.
func TestMaxIdle(t *testing.T) {
	done := make(chan struct{})
	p := New(done, 4)
	p.linger = time.Hour
	var calls, release sync.WaitGroup
	release.Add(1)
	for range 12 {
		calls.Add(1)
		p.Go(func() { defer calls.Done(); release.Wait() })
	}
	release.Done()
	calls.Wait()
	time.Sleep(20 * time.Millisecond) // the workers settle
	if w := waiting(p); w != 4 {
		t.Errorf("%d workers wait, want MaxIdle 4", w)
	}
	close(done)
	p.Wait()
	if w := waiting(p); w != 0 {
		t.Errorf("%d workers wait after done, want 0", w)
	}
}

// TestAfterDone: a call made after done was closed still runs.
func TestAfterDone(t *testing.T) {
	done := make(chan struct{})
	close(done)
	p := New(done, 4)
	ran := make(chan struct{})
	p.Go(func() { close(ran) })
	<-ran
	p.Wait()
}
