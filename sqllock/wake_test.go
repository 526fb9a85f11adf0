package sqllock_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/internal/recorder"
	"github.com/baton-go/baton/sqllock"
)

// TestReleaseWakesOneWaiter: with twenty waiters of a mutex in this
// process, a release costs one attempt, not twenty: the oldest waiter is
// woken and granted, and the others, whose polls are spaced by their
// number, make no attempt in the next moments. Waking every waiter made
// each of them retry (nineteen refused attempts per handoff).
func TestReleaseWakesOneWaiter(t *testing.T) {
	const waiters = 20
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			db, _ := b.open(t, false)
			rec := recorder.New()
			// Backoff.Max/2 = 2s: a refused waiter among n ≥ 2 polls again
			// no sooner than 2s later.
			c := newClient(t, db, sqllock.Options{TTL: 16 * time.Second, Observer: rec,
				Backoff: baton.Backoff{Base: 10 * time.Millisecond, Max: 4 * time.Second}})
			name := "wake-one-" + b.name
			m, err := c.Mutex(name)
			if err != nil {
				t.Fatal(err)
			}
			held, err := m.Lock(opCtx(t, 10*time.Second))
			if err != nil {
				t.Fatalf("Lock = %v", err)
			}
			refused := func() int {
				return len(rec.Of(func(e baton.Event) bool { return e.Kind == baton.EventAcquireRetry && e.Err == nil }))
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			grants := make(chan *baton.Lease, waiters)
			var wg sync.WaitGroup
			defer wg.Wait()
			defer cancel()
			for range waiters {
				wg.Go(func() {
					if l, err := m.Lock(ctx); err == nil {
						grants <- l
					}
				})
			}
			deadline := time.Now().Add(10 * time.Second)
			for refused() < waiters {
				if time.Now().After(deadline) {
					t.Fatalf("%d refused attempts of %d waiters after 10s", refused(), waiters)
				}
				time.Sleep(5 * time.Millisecond)
			}
			time.Sleep(200 * time.Millisecond) // the first waiters' short backoff steps
			before := refused()
			if err := held.Release(opCtx(t, 10*time.Second)); err != nil {
				t.Fatalf("Release = %v", err)
			}
			var l *baton.Lease
			select {
			case l = <-grants:
			case <-time.After(5 * time.Second):
				t.Fatal("no waiter granted within 5s of the release")
			}
			time.Sleep(300 * time.Millisecond)
			if n := refused() - before; n > 2 {
				t.Errorf("%d refused attempts after one release among %d waiters, want ≤ 2", n, waiters)
			}
			cancel()
			_ = l.Release(opCtx(t, 10*time.Second))
		})
	}
}

// TestMutexWaiterIntent: on PostgreSQL and MySQL a mutex waiter that has
// waited a while is listed by Entries (its "mwait" intent row), and the
// row is gone once it is granted (on PostgreSQL, deleted by the granting
// statement itself) or once it gives up.
func TestMutexWaiterIntent(t *testing.T) {
	for _, b := range backends(t) {
		if b.name == "sqlite" {
			continue // no intent rows there
		}
		t.Run(b.name, func(t *testing.T) {
			db, _ := b.open(t, false)
			c := newClient(t, db, sqllock.Options{TTL: testTTL})
			name := "intent-" + b.name
			held := lock(t, c, name)
			m, err := c.Mutex(name)
			if err != nil {
				t.Fatal(err)
			}
			intents := func() int {
				es, err := sqllock.Of(c).Entries(opCtx(t, 5*time.Second), name)
				if err != nil {
					t.Fatalf("Entries = %v", err)
				}
				n := 0
				for _, e := range es {
					if strings.Contains(e, "/mwait/") {
						n++
					}
				}
				return n
			}
			waitIntents := func(want int) {
				t.Helper()
				deadline := time.Now().Add(5 * time.Second)
				for intents() != want {
					if time.Now().After(deadline) {
						t.Fatalf("%d intent rows after 5s, want %d", intents(), want)
					}
					time.Sleep(20 * time.Millisecond)
				}
			}
			// One waiter gives up: its row goes (in the background).
			gctx, giveUp := context.WithCancel(context.Background())
			gave := make(chan error, 1)
			go func() { _, err := m.Lock(gctx); gave <- err }()
			waitIntents(1)
			giveUp()
			<-gave
			waitIntents(0)

			got := make(chan *baton.Lease, 1)
			go func() {
				l, err := m.Lock(opCtx(t, 10*time.Second))
				if err != nil {
					t.Errorf("waiter's Lock = %v", err)
				}
				got <- l
			}()
			waitIntents(1)
			if err := held.Release(opCtx(t, 5*time.Second)); err != nil {
				t.Fatalf("Release = %v", err)
			}
			l := <-got
			if l == nil {
				return
			}
			if n := intents(); n != 0 {
				t.Errorf("%d intent rows once the waiter was granted, want 0", n)
			}
			_ = l.Release(opCtx(t, 5*time.Second))
		})
	}
}
