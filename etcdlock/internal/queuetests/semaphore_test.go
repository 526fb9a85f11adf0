package queue_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/engine/queuekit"
)

// TestSemaphoreBound: 12 clients contend for 3 permits; never more than 3
// hold at once, and the bound is reached.
func TestSemaphoreBound(t *testing.T) {
	forEach(t, func(t *testing.T, e engine) {
		const n, clients, rounds = 3, 12, 2
		name := uniq(t)
		var (
			inflight, peak atomic.Int32
			wg             sync.WaitGroup
		)
		for range clients {
			s := semaphore(t, e.dial(t, ""), name, n)
			wg.Go(func() {
				for range rounds {
					ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
					l, err := s.Acquire(ctx)
					cancel()
					if err != nil {
						t.Errorf("Acquire = %v", err)
						return
					}
					// Counted between the grant and the release call, so the
					// real overlap is at least this large.
					cur := inflight.Add(1)
					for p := peak.Load(); cur > p && !peak.CompareAndSwap(p, cur); p = peak.Load() {
					}
					time.Sleep(120 * time.Millisecond)
					inflight.Add(-1)
					rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
					err = l.Release(rctx)
					cancel()
					if err != nil {
						t.Errorf("Release = %v", err)
						return
					}
				}
			})
		}
		wg.Wait()
		if p := peak.Load(); p != n {
			t.Errorf("peak holders = %d, want %d", p, n)
		}
	})
}

// TestSemaphorePermitComesBack: with all permits taken TryAcquire fails
// with ErrNotAcquired and leaves no lease behind; a permit comes back when
// its holder releases it and when its holder's session dies.
func TestSemaphorePermitComesBack(t *testing.T) {
	forEach(t, func(t *testing.T, e engine) {
		name := uniq(t)
		ca, cb, cc, cd := e.dial(t, ""), e.dial(t, ""), e.dial(t, ""), e.dial(t, "")
		la := acquire(t, semaphore(t, ca, name, 2).Acquire, "Acquire A")
		acquire(t, semaphore(t, cb, name, 2).Acquire, "Acquire B")
		sc := semaphore(t, cc, name, 2)
		notAcquired(t, sc.TryAcquire, "TryAcquire C with both permits taken")
		waitEntries(t, ca, name+"/leases", 2)

		release(t, la)
		lc := acquire(t, sc.TryAcquire, "TryAcquire C after A released")

		d := start(semaphore(t, cd, name, 2).Acquire)
		waiting(t, d, 300*time.Millisecond, "Acquire D with both permits taken")
		if err := cb.Close(); err != nil { // B's session ends
			t.Fatalf("Close(B) = %v", err)
		}
		ld := granted(t, d, "Acquire D after B's session ended")
		release(t, ld)
		release(t, lc)
		waitEntries(t, ca, name+"/leases", 0)
	})
}

// TestSemaphoreDisagreement: a client with N=1 that finds the permits taken
// reports the lease of a client with N=3; a client whose N agrees reports
// nothing (negative control).
func TestSemaphoreDisagreement(t *testing.T) {
	forEach(t, func(t *testing.T, e engine) {
		type report struct {
			mu  sync.Mutex
			got []queuekit.Disagreement
		}
		watch := func(s *baton.Semaphore) *report {
			r := &report{}
			d, ok := baton.As[interface {
				OnDisagreement(func(queuekit.Disagreement))
			}](s)
			if !ok {
				t.Fatalf("baton.As(%T) has no OnDisagreement", s)
			}
			d.OnDisagreement(func(d queuekit.Disagreement) {
				r.mu.Lock()
				r.got = append(r.got, d)
				r.mu.Unlock()
			})
			return r
		}
		reports := func(r *report) []queuekit.Disagreement {
			r.mu.Lock()
			defer r.mu.Unlock()
			return append([]queuekit.Disagreement(nil), r.got...)
		}

		name := uniq(t)
		three := semaphore(t, e.dial(t, ""), name, 3)
		l3 := acquire(t, three.Acquire, "Acquire (N=3)")
		one := semaphore(t, e.dial(t, ""), name, 1)
		r1 := watch(one)
		notAcquired(t, one.TryAcquire, "TryAcquire (N=1) with a lease taken")
		got := reports(r1)
		if len(got) != 1 || got[0].Permits != 3 || got[0].Want != 1 || !strings.HasPrefix(l3.Owner(), got[0].Lease) {
			t.Fatalf("disagreements = %+v, want one for lease %s with Permits 3, Want 1", got, l3.Owner())
		}
		// Each lease is reported once per Semaphore.
		notAcquired(t, one.TryAcquire, "TryAcquire (N=1) again")
		if got := reports(r1); len(got) != 1 {
			t.Errorf("disagreements after a second refusal = %+v, want still one", got)
		}
		release(t, l3)

		// Control: all agree on N=1.
		control := uniq(t)
		held := acquire(t, semaphore(t, e.dial(t, ""), control, 1).Acquire, "Acquire (control, N=1)")
		other := semaphore(t, e.dial(t, ""), control, 1)
		r2 := watch(other)
		notAcquired(t, other.TryAcquire, "TryAcquire (control, N=1) with the permit taken")
		if got := reports(r2); len(got) != 0 {
			t.Errorf("disagreements with agreeing N = %+v, want none", got)
		}
		release(t, held)
	})
}

// TestSemaphoreOptions: N below 1 is refused.
func TestSemaphoreOptions(t *testing.T) {
	forEach(t, func(t *testing.T, e engine) {
		c := e.dial(t, "")
		for _, n := range []int{0, -1} {
			if _, err := c.Semaphore(uniq(t), n); !errors.Is(err, baton.ErrInvalidOption) {
				t.Errorf("Semaphore(n=%d) = %v, want ErrInvalidOption", n, err)
			}
		}
	})
}
