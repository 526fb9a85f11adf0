package queuekit_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/clock"
	"github.com/baton-go/baton/internal/leasetest"
	"github.com/baton-go/baton/memlock"
)

// The *_mem_test.go files test the recipes' logic on memlock, the
// in-memory engine, with a virtual clock: no server, milliseconds per test,
// exact tokens. The same scenarios run against real servers in the other
// test files.

// memTTL is the virtual session TTL of the in-memory tests.
const memTTL = 10 * time.Second

// memHang bounds, in real time, each wait for something that should happen
// within microseconds; it turns a bug into a failure instead of a hang.
const memHang = 5 * time.Second

// memServer returns an in-memory server on a fake clock, closed at the end
// of t.
func memServer(t *testing.T) (*memlock.Server, *clock.Fake) {
	t.Helper()
	fake := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	srv := memlock.NewServer(memlock.Options{Clock: fake, SessionTTL: memTTL})
	t.Cleanup(srv.Close)
	return srv, fake
}

// memCtl is c's memlock client, for its fault methods.
func memCtl(c *baton.Client) *memlock.Client {
	mc, ok := baton.As[*memlock.Client](c)
	if !ok {
		panic("baton.As[*memlock.Client] failed on a memlock client")
	}
	return mc
}

// memCall is an acquire running in its own goroutine. Its owner is the
// test: cleanup cancels it, waits for it and releases what it got.
type memCall struct {
	cancel context.CancelFunc
	ch     chan memResult
	res    *memResult
}

// memResult is what the acquire returned, and the state of another lease
// read right after it returned.
type memResult struct {
	l     *baton.Lease
	err   error
	other baton.State
}

// memStart runs acquire in a goroutine. If other is set, its state is read
// as soon as acquire returns.
func memStart(t *testing.T, acquire func(context.Context) (*baton.Lease, error), other *baton.Lease) *memCall {
	ctx, cancel := context.WithCancel(context.Background())
	c := &memCall{cancel: cancel, ch: make(chan memResult, 1)}
	go func() {
		l, err := acquire(ctx)
		r := memResult{l: l, err: err}
		if other != nil {
			r.other = other.State()
		}
		c.ch <- r
	}()
	t.Cleanup(func() {
		cancel()
		r := c.wait()
		if r.l != nil && !r.l.State().Ended() {
			_ = r.l.Release(context.Background()) // tidying up; the test has judged it
		}
	})
	return c
}

func (c *memCall) wait() memResult {
	if c.res == nil {
		r := <-c.ch
		c.res = &r
	}
	return *c.res
}

// result returns the acquire's result or stops the test.
func (c *memCall) result(t *testing.T, what string) memResult {
	t.Helper()
	if c.res != nil {
		return *c.res
	}
	select {
	case r := <-c.ch:
		c.res = &r
		return r
	case <-time.After(memHang):
		t.Fatalf("%s: still waiting after %v", what, memHang)
		return memResult{}
	}
}

// granted returns the acquire's lease or stops the test.
func (c *memCall) granted(t *testing.T, what string) *baton.Lease {
	t.Helper()
	r := c.result(t, what)
	if r.err != nil {
		t.Fatalf("%s = %v, want a lease", what, r.err)
	}
	return r.l
}

// waiting checks that the acquire has not returned, giving it a moment in
// which it could.
func (c *memCall) waiting(t *testing.T, what string) {
	t.Helper()
	if c.res != nil {
		t.Fatalf("%s returned %v, %v; want it waiting", what, c.res.l, c.res.err)
	}
	select {
	case r := <-c.ch:
		c.res = &r
		t.Fatalf("%s returned %v, %v; want it waiting", what, r.l, r.err)
	case <-time.After(20 * time.Millisecond):
	}
}

// memQueued waits until dir's entries are owned by the clients named in
// owners, in that order.
func memQueued(t *testing.T, srv *memlock.Server, dir string, owners ...string) {
	t.Helper()
	deadline := time.Now().Add(memHang)
	for {
		var got []string
		for _, e := range srv.Entries(dir) {
			got = append(got, e.Client)
		}
		if slices.Equal(got, owners) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("owners of %s's entries = %v, want %v", dir, got, owners)
		}
		time.Sleep(time.Millisecond)
	}
}

// memOwners checks dir's entries right now.
func memOwners(t *testing.T, srv *memlock.Server, dir string, want ...string) {
	t.Helper()
	var got []string
	for _, e := range srv.Entries(dir) {
		got = append(got, e.Client)
	}
	if !slices.Equal(got, want) {
		t.Errorf("owners of %s's entries = %v, want %v", dir, got, want)
	}
}

// memState waits until l is in state want or stops the test.
func memState(t *testing.T, l *baton.Lease, want baton.State) {
	t.Helper()
	leasetest.AwaitState(t, l, want, memHang)
}

// memTokens checks the tokens of leases.
func memTokens(t *testing.T, want []uint64, ls ...*baton.Lease) {
	t.Helper()
	got := make([]uint64, len(ls))
	for i, l := range ls {
		got[i] = l.Token()
	}
	if !slices.Equal(got, want) {
		t.Errorf("tokens = %v, want %v", got, want)
	}
}

// memRelease releases l or reports an error.
func memRelease(t *testing.T, l *baton.Lease) {
	t.Helper()
	if err := l.Release(context.Background()); err != nil {
		t.Errorf("Release(%q) = %v, want nil", l.Name(), err)
	}
}
