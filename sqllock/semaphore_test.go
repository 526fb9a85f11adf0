package sqllock_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/engine/leasekit"
	"github.com/baton-go/baton/sqllock"
)

// TestSemaphoreSizeDisagreement: with a permit of a semaphore of 1 held, a
// second client that opens it with 1000 permits is granted (each client
// admits by its own N) and is told, at that grant, that the held permit
// was taken with N=1 — once per row, not at every acquire. The check ran
// only on refused attempts, so the client with the larger N was never
// told.
func TestSemaphoreSizeDisagreement(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			name := uniqueName("sizes")
			db1, _ := b.open(t, false)
			one, err := newClient(t, db1, sqllock.Options{}).Semaphore(name, 1)
			if err != nil {
				t.Fatalf("Semaphore(%q, 1) = %v", name, err)
			}
			held, err := one.Acquire(opCtx(t, 10*time.Second))
			if err != nil {
				t.Fatalf("N=1: Acquire = %v", err)
			}
			defer func() { _ = held.Release(opCtx(t, 5*time.Second)) }()

			db2, _ := b.open(t, false)
			many, err := newClient(t, db2, sqllock.Options{}).Semaphore(name, 1000)
			if err != nil {
				t.Fatalf("Semaphore(%q, 1000) = %v", name, err)
			}
			var (
				mu  sync.Mutex
				got []leasekit.Disagreement
			)
			reports, ok := baton.As[interface {
				OnDisagreement(func(leasekit.Disagreement))
			}](many)
			if !ok {
				t.Fatal("baton.As: the SQL semaphore has no OnDisagreement")
			}
			reports.OnDisagreement(func(d leasekit.Disagreement) {
				mu.Lock()
				got = append(got, d)
				mu.Unlock()
			})
			for i := range 2 {
				l, err := many.Acquire(opCtx(t, 10*time.Second))
				if err != nil {
					t.Fatalf("N=1000: Acquire #%d with one permit of N=1 held = %v, want granted (own N admits)", i+1, err)
				}
				if err := l.Release(opCtx(t, 5*time.Second)); err != nil {
					t.Fatalf("N=1000: Release = %v", err)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if len(got) != 1 || got[0].Name != name || got[0].Permits != 1 || got[0].Want != 1000 ||
				!strings.HasSuffix(got[0].Lease, "/"+held.Owner()) {
				t.Errorf("disagreements = %+v, want one: the held permit %s (N=1) against N=1000", got, held.Owner())
			}
		})
	}
}
