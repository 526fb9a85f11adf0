package kubelock_test

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/baton-go/baton"
)

// TestFaultAPIServerRestartShort kills the API server and restarts it at
// once, under a lease of 30s: the server is back long before the holder's
// last confirmed renewal + TTL − DriftMargin (at least 30s − 10s − 3s
// after the kill), so nobody is deposed.
func TestFaultAPIServerRestartShort(t *testing.T) {
	f := requireFaultSet(t)
	trials(t, 1, func(t *testing.T, rng *rand.Rand) {
		runSurviving(t, f, rng, 30*time.Second, func() string {
			f.killAPIServer(t)
			f.startAPIServer(t)
			ready, err := f.waitReady(60 * time.Second)
			if err != nil {
				t.Fatalf("the apiserver did not come back: %v", err)
			}
			return "restarted, ready in " + ready.Round(time.Millisecond).String()
		})
	})
}

// TestFaultEtcdFrozenShort freezes etcd for 1.5 to 2.5s under a lease of
// 6s: shorter than TTL − TTL/3 − DriftMargin (3.4s), so at least one
// renewal sent before the freeze was confirmed late enough to carry the
// holder through it, and nobody is deposed.
func TestFaultEtcdFrozenShort(t *testing.T) {
	f := requireFaultSet(t)
	trials(t, 2, func(t *testing.T, rng *rand.Rand) {
		runSurviving(t, f, rng, 6*time.Second, func() string {
			d := 1500*time.Millisecond + jitter(rng, time.Second)
			f.freezeEtcd(t, d)
			return "etcd frozen " + d.Round(time.Millisecond).String()
		})
	})
}

// runSurviving runs one trial of a fault that must depose nobody: the
// holder is never Lost and renews after the fault, the waiter is never
// granted, and the holder's write after the fault still passes the fence.
func runSurviving(t *testing.T, f *faultSet, rng *rand.Rand, ttl time.Duration, fault func() string) {
	start := time.Now()
	hrec, wrec := &recorder{}, &recorder{}
	holder, waiter := f.client(t, ttl, hrec), f.client(t, ttl, wrec)
	name := lockName(t)
	m1, _ := holder.Mutex(name)
	m2, _ := waiter.Mutex(name)
	l1, err := m1.Lock(opCtx(t, 10*time.Second))
	if err != nil {
		t.Fatalf("holder's Lock = %v", err)
	}
	defer func() { _ = l1.Release(opCtx(t, 10*time.Second)) }()
	res := newResources(t)
	if fe, ok, err := res.write(l1.Context(), name, l1.Token(), l1.Owner()); fe != nil || !ok || err != nil {
		t.Fatalf("holder's first write: fenced %v, unfenced accepted %v, error %v", fe, ok, err)
	}
	wctx, stopWaiter := context.WithCancel(context.Background())
	defer stopWaiter()
	got := make(chan grant, 1)
	go func() { // owned here: stopped and read below
		l, err := m2.Lock(wctx)
		got <- grant{l, err}
	}()
	time.Sleep(ttl/6 + jitter(rng, ttl/3)) // the waiter queues; the fault's phase
	did := fault()
	recovered := time.Now()
	if !eventually(ttl/3+5*time.Second, func() bool { return hrec.renewedAfter(recovered) && l1.State() == baton.Held }) {
		t.Fatalf("%s: holder %v, renewed after the fault %v; want Held and renewed within TTL/3",
			did, l1.State(), hrec.renewedAfter(recovered))
	}
	stopWaiter()
	g := <-got
	if g.err == nil {
		_ = g.l.Release(opCtx(t, 10*time.Second))
		t.Errorf("%s: the waiter was granted (token %d) while the holder held: two holders", did, g.l.Token())
	}
	if lost := hrec.of(baton.EventLost); len(lost) > 0 {
		t.Errorf("%s: holder told Lost (%v) by a fault shorter than its lease", did, lost[0].e.Err)
	}
	if n := len(wrec.of(baton.EventGranted)); n > 0 {
		t.Errorf("%s: %d grants of the waiter, want none", did, n)
	}
	lease, err := f.admin.CoordinationV1().Leases(f.ns).Get(opCtx(t, 10*time.Second), mustLeaseName(t, holder, name), metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get the Lease: %v", err)
	}
	if holderOf(lease) != l1.Owner() {
		t.Errorf("%s: Lease holder %q after the fault, want the holder %q", did, holderOf(lease), l1.Owner())
	}
	fe, ok, err := res.write(l1.Context(), name, l1.Token(), l1.Owner())
	if fe != nil || !ok || err != nil {
		t.Errorf("%s: holder's write after the fault: fenced %v, unfenced accepted %v, error %v", did, fe, ok, err)
	}
	susp := hrec.of(baton.EventSuspended)
	t.Logf("%s: token %d kept, holder %v (suspended %d times, resumed %d), waiter's Lock ended with %v; trial took %v",
		did, l1.Token(), l1.State(), len(susp), len(hrec.of(baton.EventResumed)), g.err, time.Since(start).Round(time.Millisecond))
}
