package kubelock_test

import (
	"context"
	"encoding/json"
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
	var st struct {
		W []struct {
			S uint64 `json:"s"` // stamp: one, plus one per refresh
			D int64  `json:"d"` // lease time, ms
		} `json:"w"`
	}
	lease := getLease(t, holder, name)
	if err := json.Unmarshal([]byte(lease.Annotations["baton.dev/state"]), &st); err != nil || len(st.W) != 1 {
		t.Fatalf("state %q: %v; want one waiter", lease.Annotations["baton.dev/state"], err)
	}
	w := st.W[0]
	if want := (2 * testTTL).Milliseconds(); w.D != want {
		t.Errorf("intent's lease time %d ms, want %d (two TTLs)", w.D, want)
	}
	// At most one refresh per 2·TTL/3 of waiting, and at least one: the
	// waiter keeps its intent alive.
	most := 1 + uint64(waited/(2*testTTL/3))
	if w.S < 2 || w.S > most {
		t.Errorf("intent's stamp %d after %v of waiting, want 2…%d (a refresh per 2·TTL/3)", w.S, waited.Round(time.Millisecond), most)
	}
}
