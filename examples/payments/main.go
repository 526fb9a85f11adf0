// Command payments tells the double-charge story of an online shop's
// payments: duplicate provider callbacks and timed-out charges, made safe
// by idempotency keys (package idem) on SQLite.
//
//	cd examples && go run ./payments
package main

import (
	"context"
	"io"
	"time"

	"github.com/baton-go/baton/examples/internal/embedded"
	"github.com/baton-go/baton/examples/internal/story"
	"github.com/baton-go/baton/fence"
	"github.com/baton-go/baton/idem"
)

func main() { story.Main("payments", run) }

// unknownBudget is how long an unsettled outcome may stay Unknown before
// it goes to the manual list: an hour in production, short here.
const unknownBudget = 400 * time.Millisecond

// Result is what the story left behind, for the test to check.
type Result struct {
	Ledger      map[string]int         // order → ledger entries
	Charges     map[string]int         // order → charges the providers made
	Arrived     map[string]int         // order → charge requests that reached a provider
	FirstTry    map[string]error       // order → the first checkout's error
	Settled     map[string]idem.Record // order → the last checkout's record
	Manual      []string               // keys on the manual handling list
	ManualRetry error                  // a checkout of the manual one after the budget
	Resolved    idem.Record            // the manual one, as Store.Resolve recorded it
	StuckAfter  []idem.Record          // the manual handling list after Resolve
}

func run(ctx context.Context, w io.Writer, dir string) (Result, error) {
	res := Result{FirstTry: map[string]error{}, Settled: map[string]idem.Record{}}
	db, err := embedded.Open(dir, "shop.db")
	if err != nil {
		return res, err
	}
	defer db.Close()
	keys, err := idem.New(db, idem.Options{Dialect: fence.SQLite, Owner: "shop-1", UnknownBudget: unknownBudget})
	if err != nil {
		return res, err
	}
	s := &shop{t: story.New(w), db: db, keys: keys}
	if err := s.migrate(ctx); err != nil {
		return res, err
	}
	card, bank := newGateway("card", true), newGateway("bank", false)

	s.t.Title("A-1001, €42.00 by card: one charge, a double click, three webhook deliveries")
	if err := duplicates(ctx, s, card); err != nil {
		return res, err
	}
	s.t.Title("A-1002, €17.50 by card: charged, but the answer is lost")
	card.arm("A-1002", false, true)
	if err := unknown(ctx, s, card, "A-1002", 1750, &res); err != nil {
		return res, err
	}
	s.t.Title("A-1003, €8.00 by card: the request is lost on the way")
	card.arm("A-1003", true, false)
	if err := unknown(ctx, s, card, "A-1003", 800, &res); err != nil {
		return res, err
	}
	s.t.Title("A-1004, €99.00 by bank transfer: made, answer lost, and the bank has no status API")
	bank.arm("A-1004", false, true)
	if err := manual(ctx, s, bank, "A-1004", 9900, &res); err != nil {
		return res, err
	}
	return res, summary(ctx, s, []*gateway{card, bank}, &res)
}

func summary(ctx context.Context, s *shop, gws []*gateway, res *Result) error {
	s.t.Title("end")
	var err error
	if res.Ledger, err = s.entries(ctx); err != nil {
		return err
	}
	res.Charges, res.Arrived = map[string]int{}, map[string]int{}
	for _, gw := range gws {
		gw.mu.Lock()
		for ref, ids := range gw.charges {
			res.Charges[ref] += len(ids)
		}
		for ref, n := range gw.arrived {
			res.Arrived[ref] += n
		}
		gw.mu.Unlock()
	}
	s.t.Say("charges the providers made: %v", res.Charges)
	s.t.Say("ledger entries:               %v", res.Ledger)
	s.t.Say("resolved by hand:             %v", res.Manual)
	return nil
}
