package kubelock_test

import (
	"context"
	"testing"
	"time"

	"github.com/baton-go/baton/kubelock"
)

// TestIntentRefreshesSparingly: a semaphore waiter's intent lasts two
// TTLs and is refreshed about every third of that, not every TTL/3. Each
// refresh is a write of the name's one Lease that the holders' renewals
// must race; at a TTL/3 pace, nine waiters on a loaded host made their
// holders lose their leases.
func TestIntentRefreshesSparingly(t *testing.T) {
	o := kubelock.Options{TTL: testTTL}
	holder, waiter := newClient(t, o), newClient(t, o)
	name := lockName(t)
	hs, _ := holder.Semaphore(name, 1)
	l, err := hs.Acquire(opCtx(t, 10*time.Second))
	if err != nil {
		t.Fatalf("holder's Acquire = %v", err)
	}
	defer func() { _ = l.Release(opCtx(t, 5*time.Second)) }()
	ws, _ := waiter.Semaphore(name, 1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	start := time.Now()
	go func() { // the waiter; owned by this test, which cancels and reads done
		_, err := ws.Acquire(ctx)
		done <- err
	}()
	defer func() {
		cancel()
		if err := <-done; err == nil {
			t.Error("waiter's Acquire was granted a held permit")
		}
	}()
	time.Sleep(3 * testTTL)
	waited := time.Since(start)
	in, err := kubelock.Intents(name, getLease(t, holder, name))
	if err != nil || len(in) != 1 {
		t.Fatalf("Intents = %+v, %v; want one waiter", in, err)
	}
	w := in[0]
	if w.TTL != 2*testTTL {
		t.Errorf("intent's lease time %v, want %v (two TTLs)", w.TTL, 2*testTTL)
	}
	// At most one refresh per 2·TTL/3 of waiting, and at least one: the
	// waiter keeps its intent alive.
	most := 1 + uint64(waited/(2*testTTL/3))
	if w.Stamp < 2 || w.Stamp > most {
		t.Errorf("intent's stamp %d after %v of waiting, want 2…%d (a refresh per 2·TTL/3)", w.Stamp, waited.Round(time.Millisecond), most)
	}
}
