package memlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/clock"
	"github.com/baton-go/baton/internal/leasetest"
	"github.com/baton-go/baton/memlock"
)

// ttl is the virtual session TTL of the fault tests.
const ttl = 10 * time.Second

// hang bounds, in real time, every wait for something the tests expect to
// happen within microseconds; it only turns a bug into a failure instead of
// a hung test.
const hang = 5 * time.Second

// newServer returns a server on a fake clock, closed at the end of t.
func newServer(t *testing.T, opts memlock.Options) (*memlock.Server, *clock.Fake) {
	t.Helper()
	fake := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	opts.Clock = fake
	if opts.SessionTTL == 0 {
		opts.SessionTTL = ttl
	}
	srv := memlock.NewServer(opts)
	t.Cleanup(srv.Close)
	return srv, fake
}

// lock takes the mutex called name on c or stops the test.
func lock(t *testing.T, c *baton.Client, name string) *baton.Lease {
	t.Helper()
	m, err := c.Mutex(name)
	if err != nil {
		t.Fatalf("Mutex(%q) = %v", name, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), hang)
	defer cancel()
	l, err := m.Lock(ctx)
	if err != nil {
		t.Fatalf("Lock(%q) = %v", name, err)
	}
	return l
}

// result is what an asynchronous Lock returned, with the state of another
// lease read right after it returned.
type result struct {
	l     *baton.Lease
	err   error
	other baton.State
}

// lockAsync runs Lock on c's mutex name in a goroutine owned by the test:
// cancel stops it, and the test's cleanup cancels and waits. If other is
// set, its state is read as soon as Lock returns.
func lockAsync(t *testing.T, c *baton.Client, name string, other *baton.Lease) (<-chan result, context.CancelFunc) {
	t.Helper()
	m, err := c.Mutex(name)
	if err != nil {
		t.Fatalf("Mutex(%q) = %v", name, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan result, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		l, err := m.Lock(ctx)
		r := result{l: l, err: err}
		if other != nil {
			r.other = other.State()
		}
		ch <- r
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return ch, cancel
}

// await returns the result of an asynchronous Lock or stops the test.
func await(t *testing.T, ch <-chan result) result {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(hang):
		t.Fatalf("Lock still waiting after %v", hang)
		return result{}
	}
}

// pending reports that an asynchronous Lock has not returned, giving it a
// moment in which it could.
func pending(ch <-chan result) bool {
	select {
	case <-ch:
		return false
	case <-time.After(20 * time.Millisecond):
		return true
	}
}

// awaitState waits until l is in state want or stops the test.
func awaitState(t *testing.T, l *baton.Lease, want baton.State) {
	t.Helper()
	leasetest.AwaitState(t, l, want, hang)
}

// eventually polls cond until it holds or stops the test.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(hang)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, hang)
		}
		time.Sleep(time.Millisecond)
	}
}

// release releases l or reports an error.
func release(t *testing.T, l *baton.Lease) {
	t.Helper()
	if err := l.Release(context.Background()); err != nil {
		t.Errorf("Release(%q) = %v, want nil", l.Name(), err)
	}
}

// owners lists the clients owning the entries of dir, in queue order.
func owners(srv *memlock.Server, dir string) []string {
	var out []string
	for _, e := range srv.Entries(dir) {
		out = append(out, e.Client)
	}
	return out
}

// ctl is c's memlock client, for its fault methods.
func ctl(c *baton.Client) *memlock.Client {
	mc, ok := baton.As[*memlock.Client](c)
	if !ok {
		panic("baton.As[*memlock.Client] failed on a memlock client")
	}
	return mc
}
