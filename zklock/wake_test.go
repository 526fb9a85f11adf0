package zklock_test

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/zklock"
	"github.com/go-zookeeper/zk"
)

// TestWokenHeadSkipsTheQueue checks that a waiter woken at the head of a
// long queue does not build an entry for every child of the directory:
// ZooKeeper's getChildren returns all of them and go-zookeeper decodes
// each name (one allocation apiece), but the waiter's own work must not
// grow with the entries behind it. Counted in allocations, not time: the
// handoff's mallocs must stay below the decoded names plus a margin much
// smaller than the queue (List built a key per child: twice the names).
func TestWokenHeadSkipsTheQueue(t *testing.T) {
	const behind = 1500
	a := dial(t, "", zklock.Options{})
	b := dial(t, "", zklock.Options{})
	name := lockName(t)
	la := lock(t, mutex(t, a, name))
	mb := mutex(t, b, name)
	got := make(chan *baton.Lease, 1)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	go func() { // owner: the test; ends when b's Lock returns
		l, err := mb.Lock(ctx)
		if err != nil {
			t.Errorf("b's Lock = %v", err)
		}
		got <- l
	}()
	eventually(t, 5*time.Second, "b waits for a", func() bool { return b.Watches() == 1 })

	conn := foreign(t)
	dir, err := a.Dir(name)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Go(func() {
			for i := w; i < behind; i += 16 {
				if _, err := conn.Create(dir+"/_c_"+zklock.NewUUID()+"-lock-", nil, zk.FlagEphemeralSequential, zk.WorldACL(zk.PermAll)); err != nil {
					t.Errorf("Create = %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	mallocs := func() uint64 {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.Mallocs
	}
	m0 := mallocs()
	if _, _, err := conn.Children(dir); err != nil {
		t.Fatalf("Children = %v", err)
	}
	decode := mallocs() - m0 // go-zookeeper's share of one read

	runtime.GC()
	m0 = mallocs()
	release(t, la)
	lb := <-got
	spent := mallocs() - m0
	if lb == nil {
		return
	}
	defer release(t, lb)
	if lb.Token() <= la.Token() {
		t.Fatalf("b's token %d after a's %d, want greater", lb.Token(), la.Token())
	}
	if limit := decode + behind/3; spent > limit {
		t.Fatalf("handoff to the head of %d waiters: %d allocations, want at most %d (one read decodes %d)", behind, spent, limit, decode)
	}
	t.Logf("handoff: %d allocations; one read of %d children decodes %d", spent, behind+2, decode)
}
