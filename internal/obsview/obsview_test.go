package obsview_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/internal/obsview"
	"github.com/baton-go/baton/keeper"
)

// counts is what a Tracker's apply calls add up to, by gauge.
type counts [obsview.Gauges]int

func newTracker(max int) (*obsview.Tracker[string], *counts) {
	var c counts
	return obsview.NewTracker(max, func(_ string, g obsview.Gauge, d int) {
		c[g] += d
	}), &c
}

func play(tr *obsview.Tracker[string], id uint64, kinds ...baton.EventKind) {
	for _, k := range kinds {
		tr.Observe(baton.Event{Kind: k, Acquire: id}, "lock")
	}
}

// TestTrackerOrders plays a lease's events in the orders separate
// goroutines can deliver them, and checks the counts after each story.
func TestTrackerOrders(t *testing.T) {
	const (
		start, granted, failed = baton.EventAcquireStarted, baton.EventGranted, baton.EventAcquireFailed
		susp, resumed          = baton.EventSuspended, baton.EventResumed
		lost, released         = baton.EventLost, baton.EventReleased
	)
	for _, tc := range []struct {
		name  string
		kinds []baton.EventKind
		want  counts
	}{
		{"waiting", []baton.EventKind{start}, counts{1, 0, 0}},
		{"held", []baton.EventKind{start, granted}, counts{0, 1, 0}},
		{"suspended", []baton.EventKind{start, granted, susp}, counts{0, 1, 1}},
		{"resumed", []baton.EventKind{start, granted, susp, resumed}, counts{0, 1, 0}},
		{"failed", []baton.EventKind{start, failed}, counts{}},
		{"released", []baton.EventKind{start, granted, released}, counts{}},
		{"suspended before the grant", []baton.EventKind{start, susp, granted}, counts{0, 1, 1}},
		{"lost before the grant", []baton.EventKind{start, susp, lost, granted}, counts{}},
		{"suspended after the loss", []baton.EventKind{start, granted, lost, susp, resumed}, counts{}},
		{"end never seen start", []baton.EventKind{released}, counts{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr, got := newTracker(0)
			play(tr, baton.NextAcquireID(), tc.kinds...)
			if *got != tc.want {
				t.Errorf("counts after %v = %v, want %v", tc.kinds, *got, tc.want)
			}
		})
	}
}

// TestTrackerBounds checks that events without an acquire ID and acquires
// beyond the bound leave the counts alone, and that nothing stays tracked
// once every lease ended.
func TestTrackerBounds(t *testing.T) {
	tr, got := newTracker(2)
	play(tr, 0, baton.EventAcquireStarted, baton.EventGranted)
	ids := []uint64{baton.NextAcquireID(), baton.NextAcquireID(), baton.NextAcquireID()}
	for _, id := range ids {
		play(tr, id, baton.EventAcquireStarted, baton.EventGranted)
	}
	if want := (counts{0, 2, 0}); *got != want || tr.Tracking() != 2 {
		t.Errorf("three leases with room for two: counts %v, Tracking() %d; want %v, 2", *got, tr.Tracking(), want)
	}
	for _, id := range ids {
		play(tr, id, baton.EventReleased)
	}
	if *got != (counts{}) || tr.Tracking() != 0 {
		t.Errorf("all released: counts %v, Tracking() %d; want zero", *got, tr.Tracking())
	}
}

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		err          error
		result, lost string
	}{
		{nil, "granted", "other"},
		{fmt.Errorf("%w: %w", baton.ErrUnavailable, context.DeadlineExceeded), "unavailable", "other"},
		{context.Canceled, "cancelled", "other"},
		{fmt.Errorf("%w: %w", baton.ErrLost, baton.ErrSessionLost), "session_lost", "session_expired"},
		{fmt.Errorf("%w: %w", baton.ErrLost, keeper.ErrGone), "lost", "gone"},
		{keeper.ErrDeadline, "error", "deadline"},
	} {
		if got := obsview.Result(tc.err); got != tc.result {
			t.Errorf("Result(%v) = %q, want %q", tc.err, got, tc.result)
		}
		if got := obsview.Cause(tc.err); got != tc.lost {
			t.Errorf("Cause(%v) = %q, want %q", tc.err, got, tc.lost)
		}
	}
	if got := obsview.IdemOutcome("settled"); got != "settled" {
		t.Errorf("IdemOutcome(settled) = %q, want settled", got)
	}
	if got := obsview.TaskOutcome("settled"); got != "other" {
		t.Errorf("TaskOutcome(settled) = %q, want other: not a task outcome", got)
	}
}
