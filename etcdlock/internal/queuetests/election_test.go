package queue_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/baton-go/baton"
)

type campaign struct {
	id  string
	ld  *baton.Leader
	err error
}

// campaignAs campaigns on a goroutine owned by the test; it returns when
// CampaignAs does (at the latest after 30s or when the client closes).
func campaignAs(el *baton.Election, id string, out chan<- campaign) {
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		ld, err := el.CampaignAs(ctx, id)
		out <- campaign{id, ld, err}
	}()
}

// nextLeader waits for the next campaign to win and fails unless one does
// within 10s.
func nextLeader(t *testing.T, ch <-chan campaign) campaign {
	t.Helper()
	select {
	case c := <-ch:
		if c.err != nil {
			t.Fatalf("CampaignAs(%q) = %v, want leadership", c.id, c.err)
		}
		return c
	case <-time.After(10 * time.Second):
		t.Fatal("no candidate won within 10s")
	}
	return campaign{}
}

// observed waits until the observer reports a leader with ID id ("" for
// none).
func observed(t *testing.T, obs <-chan baton.Candidate, id string, none bool) baton.Candidate {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case c, ok := <-obs:
			if !ok {
				t.Fatalf("Observe closed while waiting for leader %q", id)
			}
			if none && c == (baton.Candidate{}) {
				return c
			}
			if !none && c.ID == id && c.Entry != "" {
				return c
			}
		case <-timeout:
			t.Fatalf("Observe did not report leader %q (none=%v) within 10s", id, none)
		}
	}
}

// TestElectionHandOver: three candidates; one leads at a time; each
// resigns in order (Admit refused at once, then Drain, then Checkpoint
// while still leader, then release); the next one leads with a larger
// epoch; Leader and Observe report every change.
func TestElectionHandOver(t *testing.T) {
	forEach(t, func(t *testing.T, e engine) {
		name := uniq(t)
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		watcher := election(t, e.dial(t, ""), name)
		if _, err := watcher.Leader(ctx); !errors.Is(err, baton.ErrNoLeader) {
			t.Fatalf("Leader() before any candidate = %v, want ErrNoLeader", err)
		}
		octx, ocancel := context.WithCancel(ctx)
		defer ocancel()
		obs, err := watcher.Observe(octx)
		if err != nil {
			t.Fatalf("Observe = %v", err)
		}
		observed(t, obs, "", true)

		wins := make(chan campaign, 3)
		for i := range 3 {
			campaignAs(election(t, e.dial(t, ""), name), fmt.Sprintf("cand-%d", i), wins)
		}
		var epoch uint64
		var led []string
		for range 3 {
			w := nextLeader(t, wins)
			select {
			case other := <-wins:
				t.Fatalf("%q won while %q leads (err %v)", other.id, w.id, other.err)
			case <-time.After(200 * time.Millisecond):
			}
			if w.ld.Epoch() <= epoch {
				t.Errorf("%q epoch %d, want > previous leader's %d", w.id, w.ld.Epoch(), epoch)
			}
			epoch = w.ld.Epoch()
			led = append(led, w.id)
			if w.ld.ID() != w.id || !w.ld.Accepting() {
				t.Errorf("leader %q: ID() = %q, Accepting() = %v, want its ID and true", w.id, w.ld.ID(), w.ld.Accepting())
			}
			if err := w.ld.Admit(ctx); err != nil {
				t.Errorf("Admit() of healthy leader %q = %v, want nil", w.id, err)
			}
			seen := observed(t, obs, w.id, false)
			if cur, err := watcher.Leader(ctx); err != nil || cur.ID != w.id || cur.Entry != seen.Entry {
				t.Errorf("Leader() = (%+v, %v), want ID %q at %q", cur, err, w.id, seen.Entry)
			}

			var steps []string
			err := w.ld.Resign(ctx, baton.ResignPlan{
				Drain: func(dctx context.Context) error {
					if err := w.ld.Admit(dctx); !errors.Is(err, baton.ErrResigning) || w.ld.Accepting() {
						t.Errorf("while draining: Admit() = %v, Accepting() = %v; want ErrResigning, false", err, w.ld.Accepting())
					}
					steps = append(steps, "drain")
					return nil
				},
				DrainTimeout: time.Second,
				Checkpoint: func(cctx context.Context, ep uint64) error {
					// Still the leader: nobody else may lead before the
					// checkpoint is saved.
					cur, err := watcher.Leader(cctx)
					if err != nil || cur.ID != w.id {
						t.Errorf("Leader() during checkpoint = (%+v, %v), want %q", cur, err, w.id)
					}
					if w.ld.Context().Err() != nil {
						t.Errorf("leader context ended before the checkpoint: %v", context.Cause(w.ld.Context()))
					}
					steps = append(steps, fmt.Sprintf("checkpoint@%d", ep))
					return nil
				},
			})
			if want := []string{"drain", fmt.Sprintf("checkpoint@%d", w.ld.Epoch())}; err != nil || !slices.Equal(steps, want) {
				t.Errorf("Resign = %v with steps %q, want nil with %q", err, steps, want)
			}
			if cause := context.Cause(w.ld.Context()); !errors.Is(cause, baton.ErrReleased) {
				t.Errorf("resigned leader's context cause = %v, want ErrReleased", cause)
			}
		}
		if len(led) != 3 {
			t.Errorf("leaders = %q, want three", led)
		}
		observed(t, obs, "", true)
		if _, err := watcher.Leader(ctx); !errors.Is(err, baton.ErrNoLeader) {
			t.Errorf("Leader() after all resigned = %v, want ErrNoLeader", err)
		}
		ocancel()
		for range obs { // the observer closes its channel when its ctx ends
		}
	})
}

// TestElectionLeaderPartitioned: a leader cut off from the server stops
// taking work at once (Accepting false, Admit blocks), then loses
// leadership (context cancelled, Admit fails with ErrLost) before the
// other candidate leads with a larger epoch; after the partition heals it
// is never leader again under that entry.
func TestElectionLeaderPartitioned(t *testing.T) {
	forEach(t, func(t *testing.T, e engine) {
		name := uniq(t)
		p := proxy(t, e)
		cut := e.dial(t, p.Addr)
		fc := e.dial(t, "")
		wins := make(chan campaign, 2)
		campaignAs(election(t, cut, name), "old", wins)
		old := nextLeader(t, wins)
		campaignAs(election(t, fc, name), "new", wins)
		waitEntries(t, fc, name, 2)

		if err := p.Blackhole(""); err != nil {
			t.Fatalf("Blackhole = %v", err)
		}
		cutAt := time.Now()
		defer p.Heal()
		for old.ld.Accepting() {
			if time.Since(cutAt) > sessionTTL {
				t.Fatalf("leader still accepting work %v after the partition", time.Since(cutAt))
			}
			time.Sleep(10 * time.Millisecond)
		}
		if st := old.ld.Lease().State(); st != baton.Suspended {
			t.Errorf("leader state when it stopped accepting = %v, want suspended", st)
		}
		actx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		err := old.ld.Admit(actx)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Admit() of suspended leader = %v, want it to block until the deadline", err)
		}

		select {
		case <-old.ld.Context().Done():
		case <-time.After(2 * sessionTTL):
			t.Fatalf("leader context not cancelled %v after the partition", time.Since(cutAt))
		}
		lostAt := time.Now()
		if err := old.ld.Admit(context.Background()); !errors.Is(err, baton.ErrLost) {
			t.Errorf("Admit() of lost leader = %v, want ErrLost", err)
		}

		nw := nextLeader(t, wins)
		if !time.Now().After(lostAt) || old.ld.Lease().State() != baton.Lost {
			t.Errorf("new leader while the old one is %v", old.ld.Lease().State())
		}
		if nw.ld.Epoch() <= old.ld.Epoch() {
			t.Errorf("new leader's epoch %d, want > old leader's %d", nw.ld.Epoch(), old.ld.Epoch())
		}

		p.Heal()
		time.Sleep(500 * time.Millisecond)
		if st := old.ld.Lease().State(); st != baton.Lost || old.ld.Accepting() {
			t.Errorf("old leader after the partition healed: %v, Accepting() = %v; want lost, false", st, old.ld.Accepting())
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if cur, err := election(t, fc, name).Leader(ctx); err != nil || cur.ID != "new" {
			t.Errorf("Leader() after the heal = (%+v, %v), want %q", cur, err, "new")
		}
		if err := nw.ld.Resign(ctx, baton.ResignPlan{}); err != nil {
			t.Errorf("Resign = %v", err)
		}
	})
}
