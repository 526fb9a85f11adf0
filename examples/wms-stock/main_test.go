package main

import (
	"errors"
	"testing"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/examples/internal/storytest"
)

func TestStory(t *testing.T) {
	res := storytest.Play(t, run)
	for _, tc := range []struct {
		name  string
		round Round
	}{{"unfenced", res.Unfenced}, {"fenced", res.Fenced}} {
		r := tc.round
		if r.TokenWest <= r.TokenEast {
			t.Errorf("%s: pick-west's token %d, want above pick-east's %d", tc.name, r.TokenWest, r.TokenEast)
		}
		if !r.EastLost {
			t.Errorf("%s: pick-east's lease was not lost after its pause", tc.name)
		}
		if got := r.Reserved["O-2"]; got != 4 {
			t.Errorf("%s: O-2 reserved %d units, want 4", tc.name, got)
		}
	}

	// The negative control: without the fence the late write lands and
	// the shelf goes below zero. If it did not, the fenced round below
	// could not tell fencing from luck.
	if err := res.Unfenced.LateReservation; err != nil {
		t.Errorf("unfenced late reservation = %v, want it accepted", err)
	}
	if got := res.Unfenced.Stock; got != -2 {
		t.Errorf("unfenced stock = %d, want -2 (oversold)", got)
	}

	f := res.Fenced
	if !errors.Is(f.LateReservation, baton.ErrStaleToken) {
		t.Errorf("fenced late reservation = %v, want %v", f.LateReservation, baton.ErrStaleToken)
	}
	if f.Stock != 1 {
		t.Errorf("fenced stock = %d, want 1", f.Stock)
	}
	if _, ok := f.Reserved["O-1"]; ok || len(f.Reserved) != 1 {
		t.Errorf("fenced reservations = %v, want only O-2", f.Reserved)
	}
	if !f.Backordered {
		t.Errorf("fenced: O-1 was not backordered")
	}
}
