package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/baton-go/baton/examples/internal/story"
	"github.com/baton-go/baton/idem"
)

// callTimeout is how long the shop waits for the provider: short, so the
// story's timeouts take a fifth of a second.
const callTimeout = 200 * time.Millisecond

// shop is the payment side of an online shop: checkout charges through a
// provider under the idempotency key "charge/<order>", and every path
// that learns of a charge (the checkout's answer, the provider's webhook,
// redelivered) posts it to the ledger under the key "ledger/<charge>".
type shop struct {
	t    *story.Teller
	db   *sql.DB
	keys *idem.Store
}

func (s *shop) migrate(ctx context.Context) error {
	if err := s.keys.Migrate(ctx); err != nil {
		return err
	}
	_, err := s.db.ExecContext(ctx, `CREATE TABLE ledger (
		id INTEGER PRIMARY KEY AUTOINCREMENT, order_id TEXT NOT NULL, charge_id TEXT NOT NULL, cents INTEGER NOT NULL)`)
	return err
}

// checkout charges an order. A timeout is Unknown, never Failed: the
// charge may have gone through. A later checkout of the order settles an
// Unknown with the provider's status API (when it has one), and sends the
// charge again only when that API says it never arrived.
func (s *shop) checkout(ctx context.Context, gw *gateway, order string, cents int) (idem.Record, error) {
	call := func(ctx context.Context) ([]byte, error) {
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		defer cancel()
		id, err := gw.Charge(cctx, order, cents)
		return []byte(id), err
	}
	var query func(context.Context) ([]byte, idem.State, error)
	if gw.hasLookup {
		query = func(ctx context.Context) ([]byte, idem.State, error) {
			id, found, err := gw.Lookup(ctx, order)
			switch {
			case err != nil:
				return nil, idem.Unknown, err
			case found:
				return []byte(id), idem.Success, nil
			}
			return nil, idem.Init, nil // certainly never arrived: Do sends it again, same key
		}
	}
	return s.keys.Do(ctx, "charge/"+order, call, query)
}

// post books a charge in the ledger, once per charge however many paths
// and deliveries report it.
func (s *shop) post(ctx context.Context, order, charge string, cents int) (idem.Record, error) {
	return s.keys.Do(ctx, "ledger/"+charge, func(ctx context.Context) ([]byte, error) {
		time.Sleep(20 * time.Millisecond) // a slow booking, so duplicates overlap
		res, err := s.db.ExecContext(ctx, `INSERT INTO ledger (order_id, charge_id, cents) VALUES (?, ?, ?)`, order, charge, cents)
		if err != nil {
			return nil, err
		}
		id, err := res.LastInsertId()
		return fmt.Appendf(nil, "entry %d", id), err
	}, nil)
}

// webhook is the provider's "charge succeeded" callback. A delivery that
// meets the booking in progress answers "retry later" (the provider
// redelivers); every other duplicate is acknowledged with the booking
// already recorded.
func (s *shop) webhook(ctx context.Context, delivery, order, charge string, cents int) (acked bool, err error) {
	rec, err := s.post(ctx, order, charge, cents)
	switch {
	case errors.Is(err, idem.ErrInProgress):
		s.t.Say("webhook %s for %s: booking in progress elsewhere → 409, the provider will redeliver", delivery, charge)
		return false, nil
	case err != nil:
		return false, err
	}
	s.t.Say("webhook %s for %s: 200, %s (%s)", delivery, charge, rec.Result, rec.State)
	return true, nil
}

// entries counts the ledger entries of each order.
func (s *shop) entries(ctx context.Context) (map[string]int, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT order_id, COUNT(*) FROM ledger GROUP BY order_id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	n := map[string]int{}
	for rows.Next() {
		var order string
		var c int
		if err := rows.Scan(&order, &c); err != nil {
			return nil, err
		}
		n[order] = c
	}
	return n, rows.Err()
}
