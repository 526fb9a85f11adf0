package batonotel_test

import (
	"testing"

	"go.opentelemetry.io/otel/attribute"

	"github.com/baton-go/baton/engine"
	batonotel "github.com/baton-go/baton/otel"
	"github.com/baton-go/baton/testkit/storytest"
)

// TestHerdZK queues 100 waiters behind one holder on a real ZooKeeper,
// all reporting to one Observer: baton.acquires.waiting reads exactly 100
// while the holder holds, then 0 once the holder and every waiter in turn
// have released, with 101 grants, 101 waits and 101 of each span.
func TestHerdZK(t *testing.T) {
	const herd = 100
	r := newRig(t, batonotel.Options{})
	lock := []attribute.KeyValue{attribute.String("baton.engine", "zk"), attribute.String("baton.recipe", "mutex")}
	granted := append(lock[:2:2], attribute.String("baton.result", "granted"))
	storytest.Herd{
		Name:     "baton-test/otel-herd/" + engine.NewOwnerID()[:8],
		N:        herd,
		Observer: r.o,
		Waiting:  func() int64 { return r.collect().sum("baton.acquires.waiting", lock...) },
		Queued: func() {
			m := r.collect()
			m.gauges("the herd waiting", herd, 1, 0, lock...)
			if got := m.sum("baton.acquires", granted...); got != 1 {
				t.Errorf("grants before the release = %d, want 1", got)
			}
		},
	}.Run(t)
	m := r.collect()
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
