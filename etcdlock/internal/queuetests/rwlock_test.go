package queue_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/baton-go/baton"
)

// TestRWQueueOrder builds the queue R41 R42 W43 R44 and watches the grants:
// R41 and R42 read together, W43 waits for both, R44 waits for W43 (a
// reader never overtakes a queued writer), and the writer's token exceeds
// both earlier readers'.
func TestRWQueueOrder(t *testing.T) {
	forEach(t, func(t *testing.T, e engine) {
		name := uniq(t)
		a, b, c, d := e.dial(t, ""), e.dial(t, ""), e.dial(t, ""), e.dial(t, "")
		r41 := acquire(t, rwmutex(t, a, name).RLock, "R41 RLock")
		r42 := acquire(t, rwmutex(t, b, name).RLock, "R42 RLock (while R41 reads)")
		w43 := start(rwmutex(t, c, name).Lock)
		waitEntries(t, a, name, 3)
		r44 := start(rwmutex(t, d, name).RLock)
		waitEntries(t, a, name, 4)

		waiting(t, w43, 300*time.Millisecond, "W43 Lock while R41 and R42 read")
		waiting(t, r44, 0, "R44 RLock behind W43")
		release(t, r41)
		waiting(t, w43, 300*time.Millisecond, "W43 Lock while R42 reads")
		release(t, r42)
		w := granted(t, w43, "W43 Lock after R41 and R42 released")
		if w.Token() <= r41.Token() || w.Token() <= r42.Token() {
			t.Errorf("W43 token %d, want > R41's %d and R42's %d", w.Token(), r41.Token(), r42.Token())
		}
		waiting(t, r44, 300*time.Millisecond, "R44 RLock while W43 writes")
		release(t, w)
		r := granted(t, r44, "R44 RLock after W43 released")
		if r.Token() <= w.Token() {
			t.Errorf("R44 token %d, want > W43's %d", r.Token(), w.Token())
		}
		release(t, r)
		waitEntries(t, a, name, 0)
	})
}

// TestRWExclusion: a writer excludes readers and writers; readers exclude
// writers but not readers.
func TestRWExclusion(t *testing.T) {
	forEach(t, func(t *testing.T, e engine) {
		name := uniq(t)
		a, b := rwmutex(t, e.dial(t, ""), name), rwmutex(t, e.dial(t, ""), name)

		w := acquire(t, a.Lock, "Lock")
		notAcquired(t, b.TryRLock, "TryRLock while written")
		notAcquired(t, b.TryLock, "TryLock while written")
		release(t, w)

		r := acquire(t, a.RLock, "RLock")
		r2 := acquire(t, b.TryRLock, "TryRLock while read")
		notAcquired(t, b.TryLock, "TryLock while read")
		release(t, r2)
		release(t, r)
		release(t, acquire(t, b.TryLock, "TryLock once free"))
	})
}

// TestRWUpgradeRefused: a reader asking for the write side of the same lock
// is refused (two upgrading readers would deadlock), while a writer may
// take the read side: it gets its own lease with one more hold.
func TestRWUpgradeRefused(t *testing.T) {
	forEach(t, func(t *testing.T, e engine) {
		name := uniq(t)
		c := e.dial(t, "")
		rw := rwmutex(t, c, name)

		r := acquire(t, rw.RLock, "RLock")
		ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
		for _, tc := range []struct {
			name string
			f    func(context.Context) (*baton.Lease, error)
		}{{"Lock", rw.Lock}, {"TryLock", rw.TryLock}} {
			if l, err := tc.f(ctx); !errors.Is(err, baton.ErrUpgradeRefused) {
				t.Errorf("%s(read lease's context) = (%v, %v), want ErrUpgradeRefused", tc.name, l != nil, err)
			}
		}
		cancel()
		release(t, r)

		w := acquire(t, rw.Lock, "Lock")
		ctx, cancel = context.WithTimeout(w.Context(), 5*time.Second)
		defer cancel()
		r2, err := rw.RLock(ctx)
		if err != nil || r2 != w || w.Holds() != 2 {
			t.Fatalf("RLock(write lease's context) = (%p, %v) with %d holds, want the write lease %p with 2 holds", r2, err, w.Holds(), w)
		}
		release(t, r2)
		if st := w.State(); st != baton.Held {
			t.Errorf("write lease after releasing the nested read = %v, want held", st)
		}
		notAcquired(t, rwmutex(t, e.dial(t, ""), name).TryRLock, "TryRLock of another client while the writer holds")
		release(t, w)
		waitEntries(t, c, name, 0)
	})
}

// TestRWWriterTokens: under mixed contention, every writer's token exceeds
// the token of every grant made before it, of either kind.
func TestRWWriterTokens(t *testing.T) {
	forEach(t, func(t *testing.T, e engine) {
		name := uniq(t)
		var (
			mu      sync.Mutex
			max     uint64
			writers int
			wg      sync.WaitGroup
		)
		for i := range 4 {
			rw := rwmutex(t, e.dial(t, ""), name)
			wg.Go(func() {
				for range 4 {
					write := i%2 == 0 || rand.IntN(3) == 0
					f := rw.RLock
					if write {
						f = rw.Lock
					}
					ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
					l, err := f(ctx)
					cancel()
					if err != nil {
						t.Errorf("acquire (write=%v) = %v", write, err)
						return
					}
					// Recorded before the release: every grant before a
					// writer's was released before the writer's grant.
					mu.Lock()
					if write {
						writers++
						if l.Token() <= max {
							t.Errorf("writer token %d, want > %d (an earlier grant's)", l.Token(), max)
						}
					}
					if l.Token() > max {
						max = l.Token()
					}
					mu.Unlock()
					time.Sleep(5 * time.Millisecond)
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
		if writers < 8 {
			t.Errorf("%d writer grants, want at least 8", writers)
		}
	})
}
