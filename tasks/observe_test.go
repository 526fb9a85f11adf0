package tasks_test

import (
	"errors"
	"testing"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/internal/recorder"
	"github.com/baton-go/baton/tasks"
)

// TestObserver is a takeover story and the exact events it reports: A
// claims and checkpoints, pauses past its lease, B takes over (reporting
// A as the owner it replaced and how long A had been silent), A's late
// checkpoint is refused once as stale, and B completes.
func TestObserver(t *testing.T) {
	const lease = 300 * time.Millisecond
	forEachDB(t, lease, func(t *testing.T, b backend) {
		ctx := t.Context()
		rec := recorder.New()
		s, err := tasks.New(b.db, tasks.Options{Table: b.table, Lease: lease, Observer: rec})
		if err != nil {
			t.Fatalf("tasks.New = %v", err)
		}
		ca, cb := tasks.Claimant{Owner: "A", Epoch: 5}, tasks.Claimant{Owner: "B", Epoch: 6}
		if _, _, err := s.Enqueue(ctx, "job-1", []byte("rows 1-1000"), 0); err != nil {
			t.Fatalf("Enqueue = %v", err)
		}
		a, err := s.Claim(ctx, ca)
		if err != nil {
			t.Fatalf("A: Claim = %v", err)
		}
		if err := a.Checkpoint(ctx, []byte("row 400")); err != nil {
			t.Fatalf("A: Checkpoint = %v", err)
		}
		if err := a.Heartbeat(ctx); err != nil {
			t.Fatalf("A: Heartbeat = %v", err)
		}
		seen := waitExpired(t, s, "job-1")
		bc, err := s.Takeover(ctx, seen, cb)
		if err != nil {
			t.Fatalf("B: Takeover = %v", err)
		}
		for range 2 { // the second write finds the claim already ended: no second event
			if err := a.Checkpoint(ctx, []byte("row 500")); !errors.Is(err, baton.ErrStaleToken) {
				t.Fatalf("A: late Checkpoint = %v, want %v", err, baton.ErrStaleToken)
			}
		}
		if err := bc.Complete(ctx, []byte("done")); err != nil {
			t.Fatalf("B: Complete = %v", err)
		}

		task := func(outcome string, c tasks.Claimant) baton.Event {
			return baton.Event{Kind: baton.EventTask, Engine: "tasks", Resource: "job-1", Token: c.Epoch, Owner: c.Owner, Outcome: outcome}
		}
		takeover := task("takeover", cb)
		takeover.StoredToken, takeover.StoredOwner = 5, "A"
		stale := task("stale", ca)
		stale.StoredToken, stale.StoredOwner = 6, "B"
		want := []baton.Event{task("claimed", ca), task("checkpoint", ca), takeover, stale, task("completed", cb)}
		got := rec.Events()
		if len(got) != len(want) {
			t.Fatalf("events = %+v, want %d", got, len(want))
		}
		for i, g := range got {
			if g.Time.IsZero() {
				t.Errorf("event %d (%s) has no Time", i, g.Outcome)
			}
			if g.Outcome == "takeover" && g.Duration < lease {
				t.Errorf("takeover: Duration = %v, want at least the %v lease A let expire", g.Duration, lease)
			}
			if g.Outcome == "stale" && !errors.Is(g.Err, baton.ErrStaleToken) {
				t.Errorf("stale: Err = %v, want %v", g.Err, baton.ErrStaleToken)
			}
			g.Time, g.Duration, g.Err = time.Time{}, 0, nil
			if g != want[i] {
				t.Errorf("event %d = %+v, want %+v", i, g, want[i])
			}
		}
	})
}
