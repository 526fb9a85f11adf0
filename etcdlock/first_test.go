package etcdlock_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/etcdlock"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
)

// countingClient is an etcd client to the test server that counts its
// unary calls by method.
type countingClient struct {
	*clientv3.Client
	mu    sync.Mutex
	calls map[string]int
}

func newCountingClient(t *testing.T) *countingClient {
	t.Helper()
	cc := &countingClient{calls: make(map[string]int)}
	count := func(ctx context.Context, method string, req, reply any, conn *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		cc.mu.Lock()
		cc.calls[method[strings.LastIndexByte(method, '/')+1:]]++
		cc.mu.Unlock()
		return invoker(ctx, method, req, reply, conn, opts...)
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{rawClient(t, "").Endpoints()[0]}, DialTimeout: 5 * time.Second,
		DialOptions: []grpc.DialOption{grpc.WithChainUnaryInterceptor(count)}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	cc.Client = cli
	return cc
}

// take returns the calls counted since the last take.
func (cc *countingClient) take() map[string]int {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	m := cc.calls
	cc.calls = make(map[string]int)
	return m
}

// waitEntries waits until name has n entries.
func waitEntries(t *testing.T, c *etcdlock.Client, name string, n int) {
	t.Helper()
	if !eventually(5*time.Second, func() bool { return len(entries(t, c, name)) == n }) {
		t.Fatalf("%s: %d entries, want %d", name, len(entries(t, c, name)), n)
	}
}

// TestWokenAfterFirstReadsNoRange: when the holder a waiter queued behind
// releases, having been granted as the first with others behind it, the
// waiter learns it is first from one transaction of compares, not a range
// of the queue (which the server sorts whole), and its token is past the
// holder's.
func TestWokenAfterFirstReadsNoRange(t *testing.T) {
	cc := newCountingClient(t)
	a, b := newClient(t, etcdlock.Options{}), newClient(t, etcdlock.Options{})
	c := newClientOn(t, cc.Client, etcdlock.Options{})
	name := uniq(t)
	la := lock(t, mutex(t, a, name), name)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	gotB := acquireAsync(t, ctx, mutex(t, b, name).Lock)
	waitEntries(t, a, name, 2)
	gotC := acquireAsync(t, ctx, mutex(t, c, name).Lock)
	waitEntries(t, a, name, 3)
	time.Sleep(100 * time.Millisecond) // c's watch is registered
	release(t, la)
	lb := <-gotB
	if lb == nil {
		return
	}

	cc.take()
	release(t, lb)
	lc := <-gotC
	calls := cc.take()
	if lc == nil {
		return
	}
	defer release(t, lc)
	if calls["Range"] != 0 || calls["Txn"] != 1 {
		t.Errorf("the woken waiter called %v; want one Txn and no Range", calls)
	}
	if lc.Token() <= lb.Token() || lb.Token() <= la.Token() {
		t.Errorf("tokens a %d, b %d, c %d; want increasing", la.Token(), lb.Token(), lc.Token())
	}
}

// TestWokenBehindLeaverStillWaits: a waiter whose predecessor gave up
// (never granted: the holder before it is still there) must read the queue
// and go on waiting, even with a stale release mark in place; it takes the
// lock once the holder releases.
func TestWokenBehindLeaverStillWaits(t *testing.T) {
	a, w, b := newClient(t, etcdlock.Options{}), newClient(t, etcdlock.Options{}), newClient(t, etcdlock.Options{})
	name := uniq(t)
	la := lock(t, mutex(t, a, name), name)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	wctx, wcancel := context.WithCancel(ctx)
	wgot := make(chan *baton.Lease, 1)
	go func() { // owner: the test; ends when w's Lock returns
		l, _ := mutex(t, w, name).Lock(wctx)
		wgot <- l
	}()
	waitEntries(t, a, name, 2)
	got := acquireAsync(t, ctx, mutex(t, b, name).Lock)
	waitEntries(t, a, name, 3)
	time.Sleep(100 * time.Millisecond) // b's watch is registered
	// A mark left by an earlier first holder's release, not w's.
	if _, err := rawClient(t, "").Put(ctx, name+"\x00released", name+"/1@1"); err != nil {
		t.Fatal(err)
	}
	wcancel()
	if l := <-wgot; l != nil {
		t.Fatalf("w got the lock held by a")
	}
	waitEntries(t, a, name, 2) // w's entry is gone
	select {
	case lb := <-got:
		if lb != nil {
			t.Fatalf("b took the lock while a holds it (a's token %d, b's %d)", la.Token(), lb.Token())
		}
		return
	case <-time.After(500 * time.Millisecond):
	}
	release(t, la)
	select {
	case lb := <-got:
		if lb == nil {
			return
		}
		release(t, lb)
		if lb.Token() <= la.Token() {
			t.Errorf("b's token %d after a's %d, want greater", lb.Token(), la.Token())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("b not granted within 10s of a's release")
	}
}
