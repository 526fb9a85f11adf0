package obsview_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/engine"
	"github.com/baton-go/baton/engine/leasekit/keeper"
	"github.com/baton-go/baton/obsview"
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
			play(tr, engine.NextAcquireID(), tc.kinds...)
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
	ids := []uint64{engine.NextAcquireID(), engine.NextAcquireID(), engine.NextAcquireID()}
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

// TestVocabularies: every class a classifier returns is in the list the
// adapters pre-create series from, so no series first appears at 1.
func TestVocabularies(t *testing.T) {
	errs := []error{nil, context.Canceled, context.DeadlineExceeded, errors.New("other"),
		baton.ErrLost, baton.ErrReleased, baton.ErrNotHeld, baton.ErrNotAcquired, baton.ErrSessionLost,
		baton.ErrUnavailable, baton.ErrStaleToken, baton.ErrInvalidName, baton.ErrInvalidOption,
		baton.ErrUpgradeRefused, baton.ErrNoLeader, baton.ErrResigning, baton.ErrAuth, baton.ErrClosed,
		keeper.ErrDeadline, keeper.ErrGone, keeper.ErrFixedExpired}
	results, causes := map[string]bool{}, map[string]bool{}
	for _, err := range errs {
		results[obsview.Result(err)] = true
		causes[obsview.Cause(err)] = true
	}
	for _, c := range []struct {
		what string
		got  map[string]bool
		list []string
	}{{"Result", results, obsview.Results}, {"Cause", causes, obsview.Causes}} {
		for v := range c.got {
			if !slices.Contains(c.list, v) {
				t.Errorf("%s returns %q, missing from its list %v", c.what, v, c.list)
			}
		}
		if len(c.got) != len(c.list) {
			t.Errorf("%s returned %d classes over every sentinel, its list has %d: %v", c.what, len(c.got), len(c.list), c.list)
		}
	}
	for _, e := range []baton.Event{{}, {Late: true}, {Err: errors.New("x")}} {
		if v := obsview.Renewal(e); !slices.Contains(obsview.RenewalResults, v) {
			t.Errorf("Renewal = %q, missing from %v", v, obsview.RenewalResults)
		}
	}
	for _, v := range []string{"failed", "retry", "lost"} { // documented on baton.EventTask
		if got := obsview.TaskOutcome(v); got != v {
			t.Errorf("TaskOutcome(%q) = %q", v, got)
		}
	}
	for _, v := range []string{"conflict", "resolved"} { // documented on baton.EventIdempotency
		if got := obsview.IdemOutcome(v); got != v {
			t.Errorf("IdemOutcome(%q) = %q", v, got)
		}
	}
}
