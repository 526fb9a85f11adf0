package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/baton-go/baton/idem"
)

// duplicates: the checkout's answer and the provider's webhook, delivered
// twice at once and once more later, all report one charge.
func duplicates(ctx context.Context, s *shop, card *gateway) error {
	const order, cents = "A-1001", 4200
	rec, err := s.checkout(ctx, card, order, cents)
	if err != nil {
		return fmt.Errorf("checkout %s: %w", order, err)
	}
	charge := string(rec.Result)
	s.t.Say("checkout: key charge/%s → %s, charge %s", order, rec.State, charge)
	rec, err = s.checkout(ctx, card, order, cents)
	if err != nil {
		return fmt.Errorf("second checkout %s: %w", order, err)
	}
	s.t.Say("the customer clicks Pay again: %s recorded, charge %s, the provider charged %d time(s)", rec.State, rec.Result, card.made(order))

	// The checkout books the charge while the provider's webhook arrives
	// twice, on two web nodes, at the same moment.
	var wg sync.WaitGroup
	errs := make([]error, 3)
	wg.Go(func() {
		rec, err := s.post(ctx, order, charge, cents)
		if err == nil {
			s.t.Say("checkout books %s: %s (%s)", charge, rec.Result, rec.State)
		} else if errors.Is(err, idem.ErrInProgress) {
			s.t.Say("checkout books %s: already being booked by a webhook", charge)
			err = nil
		}
		errs[0] = err
	})
	pending := make(chan string, 2)
	for i, d := range []string{"#1", "#2"} {
		wg.Go(func() {
			acked, err := s.webhook(ctx, d, order, charge, cents)
			if err == nil && !acked {
				pending <- d
			}
			errs[i+1] = err
		})
	}
	wg.Wait()
	close(pending)
	if err := errors.Join(errs...); err != nil {
		return err
	}
	time.Sleep(50 * time.Millisecond) // the provider's redelivery delay
	redeliver := []string{"#3"}
	for d := range pending {
		redeliver = append(redeliver, d+" again")
	}
	for _, d := range redeliver {
		if _, err := s.webhook(ctx, d, order, charge, cents); err != nil {
			return err
		}
	}
	return nil
}

// unknown: the first checkout times out (Unknown); the retry asks the
// provider's status API instead of charging again.
func unknown(ctx context.Context, s *shop, card *gateway, order string, cents int, res *Result) error {
	_, err := s.checkout(ctx, card, order, cents)
	res.FirstTry[order] = err
	if !errors.Is(err, idem.ErrUnknown) {
		return fmt.Errorf("first checkout of %s = %v, want %v", order, err, idem.ErrUnknown)
	}
	s.t.Say("checkout: no answer within %v → UNKNOWN, not FAILED: it may have been charged", callTimeout)
	rec, err := s.checkout(ctx, card, order, cents)
	if err != nil {
		return fmt.Errorf("retried checkout of %s: %w", order, err)
	}
	res.Settled[order] = rec
	if rec.Attempts == 1 {
		s.t.Say("retry: the status API finds charge %s → %s, nothing sent again (requests sent: %d)", rec.Result, rec.State, rec.Attempts)
	} else {
		s.t.Say("retry: the status API has no charge for %s, so it never arrived → sent again under the same key → %s %s (requests sent: %d)",
			order, rec.State, rec.Result, rec.Attempts)
	}
	post, err := s.post(ctx, order, string(rec.Result), cents)
	if err != nil {
		return err
	}
	s.t.Say("booked: %s", post.Result)
	return nil
}

// manual: a provider without a status API leaves an Unknown nobody can
// settle by asking; it must not be resent, so it goes to a person.
func manual(ctx context.Context, s *shop, bank *gateway, order string, cents int, res *Result) error {
	_, err := s.checkout(ctx, bank, order, cents)
	res.FirstTry[order] = err
	if !errors.Is(err, idem.ErrUnknown) {
		return fmt.Errorf("first checkout of %s = %v, want %v", order, err, idem.ErrUnknown)
	}
	s.t.Say("checkout: no answer within %v → UNKNOWN", callTimeout)
	_, err = s.checkout(ctx, bank, order, cents)
	if !errors.Is(err, idem.ErrUnknown) {
		return fmt.Errorf("retried checkout of %s = %v, want %v", order, err, idem.ErrUnknown)
	}
	s.t.Say("retry: no status API to ask, and a resend could pay twice → still UNKNOWN, nothing sent (the bank got %d request)", bank.made(order))
	time.Sleep(unknownBudget + 50*time.Millisecond)
	stuck, err := s.keys.Stuck(ctx)
	if err != nil {
		return err
	}
	for _, r := range stuck {
		res.Manual = append(res.Manual, r.Key)
		s.t.Say("after %v: on the manual handling list: %s %s (%s)", unknownBudget, r.Key, r.State, r.Err)
	}
	_, res.ManualRetry = s.checkout(ctx, bank, order, cents)
	s.t.Say("another checkout now calls and asks nothing: %v", res.ManualRetry)
	return resolve(ctx, s, bank, order, cents, res)
}

// resolve: a person finds the transfer on the bank statement and records
// it with Store.Resolve. The record leaves the manual list as Success, the
// next checkout returns it without sending anything, and the charge is
// booked once.
func resolve(ctx context.Context, s *shop, bank *gateway, order string, cents int, res *Result) error {
	key := "charge/" + order
	ids := bank.statement(order)
	if len(ids) != 1 {
		return fmt.Errorf("bank statement for %s lists %v, want one transfer", order, ids)
	}
	rec, err := s.keys.Resolve(ctx, key, idem.Success, []byte(ids[0]), "bank statement: transfer "+ids[0])
	if err != nil {
		return fmt.Errorf("resolve %s: %w", key, err)
	}
	res.Resolved = rec
	s.t.Say("a person finds transfer %s on the bank statement → Store.Resolve: %s %s", ids[0], rec.State, rec.Result)
	if res.StuckAfter, err = s.keys.Stuck(ctx); err != nil {
		return err
	}
	if res.Settled[order], err = s.checkout(ctx, bank, order, cents); err != nil {
		return fmt.Errorf("checkout of %s after Resolve: %w", order, err)
	}
	s.t.Say("the next checkout: %s %s, nothing sent (the bank got %d request); manual handling list: %d record(s)",
		res.Settled[order].State, res.Settled[order].Result, bank.made(order), len(res.StuckAfter))
	post, err := s.post(ctx, order, ids[0], cents)
	if err != nil {
		return err
	}
	s.t.Say("booked: %s", post.Result)
	return nil
}
