package main

import (
	"errors"
	"slices"
	"testing"

	"github.com/baton-go/baton/examples/internal/storytest"
	"github.com/baton-go/baton/idem"
)

func TestStory(t *testing.T) {
	res := storytest.Play(t, run)
	for _, order := range []string{"A-1001", "A-1002", "A-1003", "A-1004"} {
		if got := res.Charges[order]; got != 1 {
			t.Errorf("charges of %s = %d, want 1", order, got)
		}
	}
	for _, order := range []string{"A-1001", "A-1002", "A-1003", "A-1004"} {
		if got := res.Ledger[order]; got != 1 {
			t.Errorf("ledger entries of %s = %d, want 1", order, got)
		}
	}
	for _, order := range []string{"A-1002", "A-1003", "A-1004"} {
		if err := res.FirstTry[order]; !errors.Is(err, idem.ErrUnknown) {
			t.Errorf("first checkout of %s = %v, want %v", order, err, idem.ErrUnknown)
		}
	}
	// A-1002 was charged before its answer was lost: settled by the query
	// alone. A-1003 never arrived: the query said so and it was sent once
	// more, the only request the provider saw.
	if r := res.Settled["A-1002"]; r.State != idem.Success || r.Attempts != 1 {
		t.Errorf("A-1002 = %s after %d attempts, want SUCCESS after 1", r.State, r.Attempts)
	}
	if r := res.Settled["A-1003"]; r.State != idem.Success || r.Attempts != 2 || res.Arrived["A-1003"] != 1 {
		t.Errorf("A-1003 = %s after %d attempts, %d arrived; want SUCCESS after 2, 1 arrived", r.State, r.Attempts, res.Arrived["A-1003"])
	}
	if want := []string{"charge/A-1004"}; !slices.Equal(res.Manual, want) {
		t.Errorf("manual list = %v, want %v", res.Manual, want)
	}
	if !errors.Is(res.ManualRetry, idem.ErrManual) {
		t.Errorf("checkout of A-1004 after the budget = %v, want %v", res.ManualRetry, idem.ErrManual)
	}
	checkResolved(t, res)
}

// checkResolved: the person's Store.Resolve took A-1004 off the manual
// list as Success with the bank's transfer, and the checkout after it
// returned that record without sending anything again.
func checkResolved(t *testing.T, res Result) {
	t.Helper()
	if r := res.Resolved; r.Key != "charge/A-1004" || r.State != idem.Success || string(r.Result) != "bank_1" {
		t.Errorf("Resolve = %s %s %q, want charge/A-1004 SUCCESS \"bank_1\"", r.Key, r.State, r.Result)
	}
	if len(res.StuckAfter) != 0 {
		t.Errorf("manual list after Resolve = %v, want empty", res.StuckAfter)
	}
	if r := res.Settled["A-1004"]; r.State != idem.Success || string(r.Result) != "bank_1" || res.Arrived["A-1004"] != 1 {
		t.Errorf("checkout of A-1004 after Resolve = %s %q, %d arrived; want SUCCESS \"bank_1\", 1 arrived",
			r.State, r.Result, res.Arrived["A-1004"])
	}
}
