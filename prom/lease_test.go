package batonprom_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/engine/leasekit/keeper"
	batonprom "github.com/baton-go/baton/prom"
	"github.com/baton-go/baton/testkit/obsviewtest"
)

// TestLeaseEvents drives real leases through suspension, recovery, loss
// and release, and checks what the leases themselves reported.
func TestLeaseEvents(t *testing.T) {
	s := newScraper(t, batonprom.Options{})
	ctx := t.Context()

	l1, ctl1, _ := obsviewtest.Grant(ctx, s.c, "orders/1", 1)
	l2, _, _ := obsviewtest.Grant(ctx, s.c, "orders/2", 2)
	s.scrape().gauges(t, "two held", lock, 0, 2, 0)

	ctl1.Suspend()
	s.scrape().gauges(t, "one suspended", lock, 0, 2, 1)
	ctl1.Resume()
	ctl1.Suspend()
	if !ctl1.Lose(fmt.Errorf("%w (locks/orders/1)", keeper.ErrGone)) {
		t.Fatal("Lose did not end the lease")
	}
	ctl1.Suspend() // no-op on an ended lease
	if err := l1.Release(context.Background()); !errors.Is(err, baton.ErrLost) {
		t.Fatalf("Release of a lost lease = %v, want ErrLost", err)
	}
	if err := l2.Release(context.Background()); err != nil {
		t.Fatalf("Release = %v", err)
	}

	f := s.scrape()
	f.gauges(t, "all ended", lock, 0, 0, 0)
	wantValue(t, "suspensions", f.value(t, "baton_suspensions_total", lock), 2)
	wantValue(t, "losses", f.value(t, "baton_losses_total", lock+",cause=gone"), 1)
	n, _ := f.hist(t, "baton_suspension_seconds", lock)
	wantCount(t, "resumed suspensions", n, 1)
	n, _ = f.hist(t, "baton_hold_seconds", lock+",end=released")
	wantCount(t, "released", n, 1)
	n, _ = f.hist(t, "baton_hold_seconds", lock+",end=lost")
	wantCount(t, "lost", n, 1)
	if _, ok := f["baton_lost_lead_seconds"]; ok {
		t.Error("baton_lost_lead_seconds has a series, but no loss knew its lead")
	}
}
