package etcdlock_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/etcdlock"
)

// acquireAsync runs acquire in a goroutine and returns the channel its
// lease (or nil, on error) arrives on; the test's cleanup releases it.
func acquireAsync(t *testing.T, ctx context.Context, acquire func(context.Context) (*baton.Lease, error)) <-chan *baton.Lease {
	t.Helper()
	ch := make(chan *baton.Lease, 1)
	go func() {
		l, err := acquire(ctx)
		if err != nil {
			t.Errorf("acquire = %v", err)
		}
		ch <- l
	}()
	return ch
}

// TestWaiterLooksPastNestedKeys: a waiter reads only the newest keys before
// its own, and the newest ones here are a nested lock's ("<name>/n<i>/<hex>",
// under the same prefix but not entries of <name>). The waiter must look
// further back, find the holder, and wait for it.
func TestWaiterLooksPastNestedKeys(t *testing.T) {
	a, b, c := newClient(t, etcdlock.Options{}), newClient(t, etcdlock.Options{}), newClient(t, etcdlock.Options{})
	name := uniq(t)
	held := lock(t, mutex(t, a, name), name)
	for i := range 12 { // more than the first two windows (1 and 8 keys)
		n := fmt.Sprintf("%s/n%d", name, i)
		defer release(t, lock(t, mutex(t, b, n), n))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got := acquireAsync(t, ctx, mutex(t, c, name).Lock)
	select {
	case l := <-got:
		if l != nil {
			release(t, l)
		}
		t.Fatalf("Lock(%q) granted while %s holds it", name, keyOf(held))
	case <-time.After(500 * time.Millisecond):
	}
	tok := held.Token()
	release(t, held)
	select {
	case l := <-got:
		if l == nil {
			return
		}
		if l.Token() <= tok {
			t.Errorf("token %d after the holder's %d, want larger", l.Token(), tok)
		}
		release(t, l)
	case <-time.After(5 * time.Second):
		t.Fatalf("Lock(%q) not granted 5s after the holder released", name)
	}
}

// TestReaderBehindReadersWaitsForWriter: a reader waits for the nearest
// writer before it, which here is behind more readers than the first two
// windows hold; it must not be granted beside the writer's holder.
func TestReaderBehindReadersWaitsForWriter(t *testing.T) {
	w, r := newClient(t, etcdlock.Options{}), newClient(t, etcdlock.Options{})
	name := uniq(t)
	wrw, err := w.RWMutex(name)
	if err != nil {
		t.Fatalf("RWMutex = %v", err)
	}
	rrw, err := r.RWMutex(name)
	if err != nil {
		t.Fatalf("RWMutex = %v", err)
	}
	held := lock(t, wrw, name)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var readers []<-chan *baton.Lease
	for range 10 {
		readers = append(readers, acquireAsync(t, ctx, rrw.RLock))
	}
	if !eventually(5*time.Second, func() bool { return len(entries(t, r, name)) == 11 }) {
		t.Fatalf("entries = %v, want the writer and 10 readers", entries(t, r, name))
	}
	readers = append(readers, acquireAsync(t, ctx, rrw.RLock)) // behind 10 readers
	time.Sleep(500 * time.Millisecond)
	for i, ch := range readers {
		select {
		case <-ch:
			t.Fatalf("reader %d granted while the writer holds %q", i, name)
		default:
		}
	}
	release(t, held)
	for i, ch := range readers {
		select {
		case l := <-ch:
			if l != nil {
				defer release(t, l)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("reader %d not granted 5s after the writer released", i)
		}
	}
}
