package queuekit_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/baton-go/baton"
)

// TestMemElectionEpochs: candidates lead in the order they campaigned, and
// each leadership's epoch exceeds the one before, whether the leader
// resigned or its session expired.
func TestMemElectionEpochs(t *testing.T) {
	srv, _ := memServer(t)
	names := []string{"a", "b", "c"}
	var (
		clients []*baton.Client
		calls   []*memCall
		leaders [3]*baton.Leader // each written before its call returns
	)
	for i, n := range names {
		c := srv.Client(n)
		el, err := c.Election("leader")
		if err != nil {
			t.Fatalf("Election = %v", err)
		}
		clients = append(clients, c)
		calls = append(calls, memStart(t, func(ctx context.Context) (*baton.Lease, error) {
			ld, err := el.CampaignAs(ctx, "candidate-"+n)
			if err != nil {
				return nil, err
			}
			leaders[i] = ld
			return ld.Lease(), nil
		}, nil))
		memQueued(t, srv, "leader", names[:i+1]...)
		if i == 0 {
			// Granted before b creates its entry: a grant's epoch is the
			// newest revision it read, 2 if b's create came first.
			calls[0].granted(t, "a: Campaign")
		}
	}
	calls[1].waiting(t, "b: Campaign while a leads")

	watcher, _ := srv.Client("watcher").Election("leader")
	if c, err := watcher.Leader(context.Background()); err != nil || c.ID != "candidate-a" || c.Session != "a#1" {
		t.Errorf("Leader() = %+v, %v, want candidate-a on session a#1", c, err)
	}

	if err := leaders[0].Resign(context.Background(), baton.ResignPlan{}); err != nil {
		t.Errorf("a: Resign = %v", err)
	}
	calls[1].granted(t, "b: Campaign after a resigned")
	calls[2].waiting(t, "c: Campaign while b leads")

	memCtl(clients[1]).Expire()
	calls[2].granted(t, "c: Campaign after b's session expired")
	if cause := context.Cause(leaders[1].Context()); !errors.Is(cause, baton.ErrLost) {
		t.Errorf("b's leadership context cause = %v, want an error wrapping %v", cause, baton.ErrLost)
	}
	if c, err := watcher.Leader(context.Background()); err != nil || c.ID != "candidate-c" {
		t.Errorf("Leader() = %+v, %v, want candidate-c", c, err)
	}
	// Creates 1–3; a's resignation deletes (4), b's expiry deletes (5).
	got := []uint64{leaders[0].Epoch(), leaders[1].Epoch(), leaders[2].Epoch()}
	if want := []uint64{1, 4, 5}; !slices.Equal(got, want) {
		t.Errorf("epochs = %v, want %v", got, want)
	}
	if err := leaders[2].Resign(context.Background(), baton.ResignPlan{}); err != nil {
		t.Errorf("c: Resign = %v", err)
	}
	memOwners(t, srv, "leader")
}
