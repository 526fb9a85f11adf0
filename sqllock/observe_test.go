package sqllock_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/internal/recorder"
	"github.com/baton-go/baton/sqllock"
)

// acquireFunc takes one recipe's lock and returns its lease.
type acquireFunc func(ctx context.Context) (*baton.Lease, error)

// TestObservedSQLite: on each recipe, a holder's acquire is started,
// granted and released, and a waiter's is started, retried (refused, no
// error, no queue position) and granted with a larger token once the
// holder released: the events the queue recipes report, with their
// Recipe labels.
func TestObservedSQLite(t *testing.T) {
	for _, tc := range []struct {
		recipe, holderRecipe string
		locks                func(t *testing.T, c *baton.Client) (holder, waiter acquireFunc)
	}{
		{"mutex", "mutex", func(t *testing.T, c *baton.Client) (acquireFunc, acquireFunc) {
			m, _ := c.Mutex("obs")
			return m.Lock, m.Lock
		}},
		{"write", "write", func(t *testing.T, c *baton.Client) (acquireFunc, acquireFunc) {
			rw, _ := c.RWMutex("obs")
			return rw.Lock, rw.Lock
		}},
		{"read", "write", func(t *testing.T, c *baton.Client) (acquireFunc, acquireFunc) {
			rw, _ := c.RWMutex("obs")
			return rw.Lock, rw.RLock
		}},
		{"semaphore", "semaphore", func(t *testing.T, c *baton.Client) (acquireFunc, acquireFunc) {
			s, _ := c.Semaphore("obs", 1)
			return s.Acquire, s.Acquire
		}},
		{"election", "election", func(t *testing.T, c *baton.Client) (acquireFunc, acquireFunc) {
			el, _ := c.Election("obs")
			as := func(id string) acquireFunc {
				return func(ctx context.Context) (*baton.Lease, error) {
					ld, err := el.CampaignAs(ctx, id)
					if err != nil {
						return nil, err
					}
					return ld.Lease(), nil
				}
			}
			return as("a"), as("b")
		}},
	} {
		t.Run(tc.recipe, func(t *testing.T) {
			rec := recorder.New()
			db := openDB(t, "sqlite", "file:"+filepath.Join(t.TempDir(), "locks.db")+sqliteDSN)
			// A backoff step of TTL/4 (1s): the waiter's retries before the
			// release are few, and the release wakes it at once.
			c := newClient(t, db, sqllock.Options{TTL: sqliteConformanceTTL, Observer: rec,
				Backoff: baton.Backoff{Base: time.Hour, Max: time.Hour, Rand: func() float64 { return 1 }}})
			holder, waiter := tc.locks(t, c)
			observedHandOver(t, rec, "sqlite", tc.holderRecipe, tc.recipe, holder, waiter)
		})
	}
}

// observedHandOver has holder take the lock, waiter wait for it, and the
// holder release it; then it checks both acquires' events.
func observedHandOver(t *testing.T, rec *recorder.Recorder, engine, holderRecipe, waiterRecipe string, holder, waiter acquireFunc) {
	t.Helper()
	hl, err := holder(opCtx(t, 10*time.Second))
	if err != nil {
		t.Fatalf("holder's acquire = %v", err)
	}
	type result struct {
		l   *baton.Lease
		err error
	}
	ch := make(chan result, 1)
	go func() {
		l, err := waiter(opCtx(t, 20*time.Second))
		ch <- result{l, err}
	}()
	if _, ok := rec.WaitFor(10*time.Second, func(e baton.Event) bool { return e.Kind == baton.EventAcquireRetry }); !ok {
		t.Fatal("the waiter reported no retry")
	}
	if err := hl.Release(context.Background()); err != nil {
		t.Fatalf("holder's Release = %v", err)
	}
	r := <-ch
	if r.err != nil {
		t.Fatalf("waiter's acquire = %v", r.err)
	}
	if err := r.l.Release(context.Background()); err != nil {
		t.Fatalf("waiter's Release = %v", err)
	}

	ids := acquireIDs(rec)
	if len(ids) != 2 {
		t.Fatalf("%d acquires started, want 2: %+v", len(ids), rec.Events())
	}
	h, w := rec.Acquire(ids[0]), rec.Acquire(ids[1])
	if kinds := recorder.Kinds(h); !slices.Equal(kinds, []baton.EventKind{baton.EventAcquireStarted, baton.EventGranted, baton.EventReleased}) {
		t.Errorf("holder's events %v, want [acquire_started granted released]", kinds)
	}
	if len(h) == 3 && (h[1].Token != hl.Token() || h[1].Owner != hl.Owner() || h[1].Depth != 1 || h[2].Token != hl.Token()) {
		t.Errorf("holder's grant and release %+v, %+v, want Token %d, Owner %s, Depth 1", h[1], h[2], hl.Token(), hl.Owner())
	}
	n := len(w)
	if n < 4 || w[0].Kind != baton.EventAcquireStarted || w[n-2].Kind != baton.EventGranted || w[n-1].Kind != baton.EventReleased {
		t.Fatalf("waiter's events %v, want acquire_started, acquire_retry…, granted, released", recorder.Kinds(w))
	}
	for i, e := range w[1 : n-2] {
		if e.Kind != baton.EventAcquireRetry || e.Attempt != i+1 || e.Position != -1 || e.Err != nil {
			t.Errorf("waiter's event %d = %+v, want acquire_retry, Attempt %d, Position -1, no Err", i+1, e, i+1)
		}
	}
	if g := w[n-2]; g.Token != r.l.Token() || g.Token <= hl.Token() || g.Owner != r.l.Owner() || g.Wait <= 0 {
		t.Errorf("waiter's grant %+v, want Token %d > %d, Owner %s, Wait > 0", g, r.l.Token(), hl.Token(), r.l.Owner())
	}
	for i, evs := range [][]baton.Event{h, w} {
		want := []string{holderRecipe, waiterRecipe}[i]
		for _, e := range evs {
			if e.Engine != engine || e.Name != "obs" || e.Recipe != want || e.Acquire != ids[i] {
				t.Errorf("event %+v, want Engine %s, Name obs, Recipe %s, Acquire %d", e, engine, want, ids[i])
			}
		}
	}
	if others := len(rec.Events()) - len(h) - len(w); others != len(rec.Of(func(e baton.Event) bool { return e.Kind == baton.EventRenewal })) {
		t.Errorf("%d events outside the two acquires, want only renewals", others)
	}
}

// acquireIDs returns the IDs of the acquires started, in order.
func acquireIDs(rec *recorder.Recorder) []uint64 {
	var ids []uint64
	for _, e := range rec.Of(func(e baton.Event) bool { return e.Kind == baton.EventAcquireStarted }) {
		ids = append(ids, e.Acquire)
	}
	return ids
}
