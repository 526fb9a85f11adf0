package idem_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/idem"
	"github.com/baton-go/baton/internal/recorder"
)

// TestObserver follows three keys through their outcomes and checks the
// exact sequence each reports: a call that succeeds and is then a hit; a
// call of unknown outcome that a query cannot settle until the key moves
// to manual handling and an operator resolves it; and one a query settles.
func TestObserver(t *testing.T) {
	rec := recorder.New()
	const budget = 200 * time.Millisecond
	forEachDB(t, idem.Options{UnknownBudget: budget, Owner: "proc-1", Observer: rec}, func(t *testing.T, b backend) {
		ctx, s := t.Context(), b.store
		ok := func(context.Context) ([]byte, error) { return []byte("ok"), nil }
		timeout := func(context.Context) ([]byte, error) { return nil, errors.New("read timeout") }
		cannotTell := func(context.Context) ([]byte, idem.State, error) { return nil, idem.Unknown, nil }
		found := func(context.Context) ([]byte, idem.State, error) { return []byte("found"), idem.Success, nil }
		do := func(key string, call func(context.Context) ([]byte, error), query func(context.Context) ([]byte, idem.State, error), want error) {
			t.Helper()
			if _, err := s.Do(ctx, key, call, query); !errors.Is(err, want) {
				t.Fatalf("Do(%q) = %v, want %v", key, err, want)
			}
		}
		k1, k2, k3 := "pay-1-"+b.name, "pay-2-"+b.name, "pay-3-"+b.name

		do(k1, ok, nil, nil)
		do(k1, ok, nil, nil)

		do(k2, timeout, nil, idem.ErrUnknown)
		do(k2, ok, cannotTell, idem.ErrUnknown)
		time.Sleep(budget + 100*time.Millisecond)
		do(k2, ok, cannotTell, idem.ErrManual)
		do(k2, ok, cannotTell, idem.ErrManual)
		if _, err := s.Resolve(ctx, k2, idem.Success, []byte("bill"), "found on the bill"); err != nil {
			t.Fatalf("Resolve(%q) = %v", k2, err)
		}

		do(k3, timeout, nil, idem.ErrUnknown)
		do(k3, ok, found, nil)

		for _, c := range []struct {
			key  string
			want []string
			errs []error // the Err each event must match; nil entries want none
		}{
			{k1, []string{"requesting", "success", "hit"}, []error{nil, nil, nil}},
			{k2, []string{"requesting", "unknown", "unknown", "manual", "manual", "resolved"},
				[]error{nil, idem.ErrUnknown, idem.ErrUnknown, idem.ErrManual, idem.ErrManual, nil}},
			{k3, []string{"requesting", "unknown", "settled", "hit"}, []error{nil, idem.ErrUnknown, nil, nil}},
		} {
			events := rec.Of(func(e baton.Event) bool { return e.Resource == c.key })
			var got []string
			for _, e := range events {
				got = append(got, e.Outcome)
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("%s: outcomes %q, want %q", c.key, got, c.want)
				continue
			}
			for i, e := range events {
				if e.Kind != baton.EventIdempotency || e.Engine != "idem" || e.Owner != "proc-1" || e.Time.IsZero() {
					t.Errorf("%s: event %d = %+v, want an idempotency event of idem, owner proc-1, timed", c.key, i, e)
				}
				switch want := c.errs[i]; {
				case want == nil && e.Err != nil:
					t.Errorf("%s: %s event: Err = %v, want nil", c.key, e.Outcome, e.Err)
				case want != nil && !errors.Is(e.Err, want):
					t.Errorf("%s: %s event: Err = %v, want %v", c.key, e.Outcome, e.Err, want)
				}
			}
		}
	})
}
