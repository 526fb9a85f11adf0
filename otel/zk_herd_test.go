package batonotel_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/internal/testenv"
	batonotel "github.com/baton-go/baton/otel"
	"github.com/baton-go/baton/zklock"
)

// TestHerdZK queues 100 waiters behind one holder on a real ZooKeeper,
// all reporting to one Observer: baton.acquires.waiting reads exactly 100
// while the holder holds, then 0 once the holder and every waiter in turn
// have released, with 101 grants, 101 waits and 101 of each span.
func TestHerdZK(t *testing.T) {
	const herd = 100
	zk := testenv.ZK(t)
	r := newRig(t, batonotel.Options{})
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	name := "baton-test/otel-herd/" + baton.NewOwnerID()[:8]
	mutex := func() interface {
		Lock(context.Context) (*baton.Lease, error)
	} {
		c, err := zklock.Dial(ctx, []string{zk}, zklock.Options{SessionTimeout: 10 * time.Second, Observer: r.o})
		if err != nil {
			t.Fatalf("Dial: %v", err)
		}
		t.Cleanup(func() { c.Close() })
		m, err := c.Mutex(name)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	lock := []attribute.KeyValue{attribute.String("baton.engine", "zk"), attribute.String("baton.recipe", "mutex")}
	granted := append(lock[:2:2], attribute.String("baton.result", "granted"))

	l, err := mutex().Lock(ctx)
	if err != nil {
		t.Fatalf("holder: Lock = %v", err)
	}
	waiters := mutex()
	errs := make(chan error, herd)
	var wg sync.WaitGroup
	for range herd {
		wg.Add(1)
		go func() { // owner: this test, which waits for it
			defer wg.Done()
			wl, err := waiters.Lock(ctx)
			if err == nil {
				err = wl.Release(ctx)
			}
			errs <- err
		}()
	}
	deadline := time.Now().Add(30 * time.Second)
	for r.collect().sum("baton.acquires.waiting", lock...) != herd {
		if time.Now().After(deadline) {
			t.Fatalf("baton.acquires.waiting never reached %d", herd)
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond) // nobody can be granted: the figure stays
	m := r.collect()
	m.gauges("the herd waiting", herd, 1, 0, lock...)
	if got := m.sum("baton.acquires", granted...); got != 1 {
		t.Errorf("grants before the release = %d, want 1", got)
	}

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
	m = r.collect()
	m.gauges("after the herd", 0, 0, 0, lock...)
	if got := m.sum("baton.acquires", granted...); got != herd+1 {
		t.Errorf("baton.acquires{granted} = %d, want %d", got, herd+1)
	}
	if n, _ := m.hist("baton.acquire.wait", granted...); n != herd+1 {
		t.Errorf("baton.acquire.wait count = %d, want %d", n, herd+1)
	}
	count := map[string]int{}
	for _, s := range r.spans.GetSpans() {
		count[s.Name]++
	}
	if count["baton.acquire"] != herd+1 || count["baton.hold"] != herd+1 || len(count) != 2 {
		t.Errorf("spans %v, want %d baton.acquire and %d baton.hold", count, herd+1, herd+1)
	}
	if got := r.o.Tracking(); got != 0 {
		t.Errorf("Tracking() = %d after every lease ended, want 0", got)
	}
}
