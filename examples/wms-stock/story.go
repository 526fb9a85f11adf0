package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/examples/internal/embedded"
	"github.com/baton-go/baton/examples/internal/story"
	"github.com/baton-go/baton/fence"
)

// Round is the outcome of one round, for the test to check.
type Round struct {
	TokenEast, TokenWest uint64
	EastLost             bool           // pick-east's lease was lost when it woke up
	LateReservation      error          // pick-east's reservation sent after its pause
	Backordered          bool           // pick-east retried under a new lock and found too little stock
	Stock                int            // units left on the shelf at the end
	Reserved             map[string]int // order → units reserved
}

// play runs one round: pick-east (order O-1, 3 units) and pick-west
// (order O-2, 4 units) against a shelf of 5.
func play(ctx context.Context, w io.Writer, dir string, fenced bool) (r Round, err error) {
	t := story.New(w)
	sh := newShelf(fenced)
	file := "wms-unfenced.db"
	if fenced {
		file = "wms-fenced.db"
		t.Title("fenced round: the stock row checks the lock's token (fence.Row)")
	} else {
		t.Title("unfenced round: the stock row trusts the lock (fence.UnfencedRow, the negative control)")
	}
	setup, err := embedded.Open(dir, file)
	if err != nil {
		return r, err
	}
	defer setup.Close()
	if err := sh.migrate(ctx, setup); err != nil {
		return r, err
	}
	east, west, err := newServices(ctx, dir, file)
	if err != nil {
		return r, err
	}
	defer func() { err = errors.Join(err, east.Close(), west.Close()) }()
	t.Say("%d units of %s on the shelf; lock %q, lease TTL %v", startStock, sku, lockName, ttl)

	eastLease, err := east.stock.Lock(ctx)
	if err != nil {
		return r, err
	}
	r.TokenEast = eastLease.Token()
	qty, err := stock(ctx, east.DB)
	if err != nil {
		return r, err
	}
	t.Say("%v locks with token %d, reads stock %d: enough for O-1's 3 units", east, r.TokenEast, qty)

	east.Link.Freeze()
	paused := time.Now()
	t.Say("%v freezes before its write (a long GC, a VM stall): nothing it sends arrives, lease renewals included", east)

	if err := reserveAsWest(ctx, t, sh, west, &r, paused); err != nil {
		return r, err
	}

	east.Link.Thaw()
	t.Say("%v wakes up after %v, still sure of its lock: it sends O-1's reservation with token %d",
		east, time.Since(paused).Round(100*time.Millisecond), r.TokenEast)
	r.LateReservation = sh.reserve(ctx, east.DB, r.TokenEast, eastLease.Owner(), "O-1", 3)
	r.EastLost = errors.Is(eastLease.Err(), baton.ErrLost)
	var stale *fence.StaleError
	switch {
	case errors.As(r.LateReservation, &stale):
		t.Say("%v → refused by the stock row, nothing changes: token %d after token %d (%v)",
			east, stale.Token, stale.StoredToken, baton.ErrStaleToken)
	case r.LateReservation == nil:
		t.Say("%v → accepted: 3 more units promised from a shelf that had 1", east)
	default:
		return r, r.LateReservation
	}
	t.Say("%v only now learns its lease was lost: %v", east, eastLease.Err())
	if fenced {
		if err := retryAsEast(ctx, t, east, &r); err != nil {
			return r, err
		}
	}
	if r.Stock, err = stock(ctx, setup); err != nil {
		return r, err
	}
	if r.Reserved, err = reservations(ctx, setup); err != nil {
		return r, err
	}
	t.Say("end: stock %d, reservations %v", r.Stock, r.Reserved)
	return r, nil
}

// newServices starts the two picking services on file.
func newServices(ctx context.Context, dir, file string) (east, west *service, err error) {
	if east, err = newService(ctx, dir, file, "pick-east"); err != nil {
		return nil, nil, err
	}
	if west, err = newService(ctx, dir, file, "pick-west"); err != nil {
		return nil, nil, errors.Join(err, east.Close())
	}
	return east, west, nil
}

// reserveAsWest is pick-west's turn while pick-east is frozen: it waits
// for the lock, which it gets once pick-east's lease expired on the
// database clock, and reserves O-2's 4 units.
func reserveAsWest(ctx context.Context, t *story.Teller, sh shelf, west *service, r *Round, paused time.Time) error {
	lctx, cancel := context.WithTimeout(ctx, 5*ttl)
	defer cancel()
	l, err := west.stock.Lock(lctx)
	if err != nil {
		return fmt.Errorf("pick-west's lock: %w", err)
	}
	defer l.Release(context.WithoutCancel(ctx))
	r.TokenWest = l.Token()
	qty, err := stock(ctx, west.DB)
	if err != nil {
		return err
	}
	t.Say("%v is granted the lock %v later with token %d (pick-east's lease expired), reads stock %d",
		west, time.Since(paused).Round(100*time.Millisecond), r.TokenWest, qty)
	if err := sh.reserve(ctx, west.DB, r.TokenWest, l.Owner(), "O-2", 4); err != nil {
		return fmt.Errorf("pick-west's reservation: %w", err)
	}
	t.Say("%v reserves O-2's 4 units: stock 1", west)
	return nil
}

// retryAsEast is what pick-east does with the refusal: it locks again
// (a new grant, a new token), reads the stock it now has, and backorders
// O-1 because 1 unit cannot fill 3.
func retryAsEast(ctx context.Context, t *story.Teller, east *service, r *Round) error {
	l, err := east.stock.Lock(ctx)
	if err != nil {
		return fmt.Errorf("pick-east's second lock: %w", err)
	}
	defer l.Release(context.WithoutCancel(ctx))
	qty, err := stock(ctx, east.DB)
	if err != nil {
		return err
	}
	r.Backordered = qty < 3
	if !r.Backordered {
		return fmt.Errorf("pick-east found %d units after pick-west's reservation, want fewer than 3", qty)
	}
	t.Say("%v locks again (token %d), reads stock %d: O-1 goes to backorder instead", east, l.Token(), qty)
	return nil
}
