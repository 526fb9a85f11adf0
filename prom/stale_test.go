package batonprom_test

import (
	"context"
	"testing"

	"github.com/baton-go/baton/fence"
	batonprom "github.com/baton-go/baton/prom"
)

// TestStaleRejectionNamesLock: with LockNames, a refusal reported by a
// fence whose write context is a request's (named with
// fence.WithLockName, not the lease's context) is counted under its lock
// name.
func TestStaleRejectionNamesLock(t *testing.T) {
	s := newScraper(t, batonprom.Options{LockNames: true})
	ctx := fence.WithLockName(context.Background(), "orders/42")
	fence.Observe(ctx, s.c, &fence.StaleError{Resource: "order-42", Token: 6, Owner: "A", StoredToken: 7, StoredOwner: "B"})
	wantValue(t, "baton_stale_rejections_total{orders/42}",
		s.scrape().value(t, "baton_stale_rejections_total", "engine=fence,name=orders/42"), 1)
}
