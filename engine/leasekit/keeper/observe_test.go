package keeper_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/engine"
	"github.com/baton-go/baton/engine/leasekit/keeper"
	"github.com/baton-go/baton/internal/recorder"
)

// holdObserved holds a renewable lease on key, sent at epoch, whose grant
// reports to o as acquire id.
func (h *harness) holdObserved(key string, o baton.Observer, id uint64) *baton.Lease {
	h.t.Helper()
	g := engine.Grant{Name: key, Engine: "fake", Owner: "o-" + key, Observer: o, Recipe: "mutex", Acquire: id}
	l, err := h.k.Hold(context.Background(), g, keeper.Ref{Key: key, Owner: "o-" + key}, epoch, 0)
	if err != nil {
		h.t.Fatalf("Hold(%q) = %v", key, err)
	}
	h.settle()
	return l
}

func isRenewal(e baton.Event) bool { return e.Kind == baton.EventRenewal }

// TestObservedRenewals: every renewal batch, answered or failed, is one
// EventRenewal with the batch's size, its round trip and its error.
func TestObservedRenewals(t *testing.T) {
	rec := recorder.New()
	h := newHarness(t, 3, keeper.Options{Observer: rec, Engine: "fake"})
	for i := range 7 {
		h.hold(fmt.Sprintf("k%d", i), 0)
	}
	h.stepTo(2 * time.Second)
	h.st.set(func(s *fakeStore) { s.renewErr = errDown })
	h.stepTo(3 * time.Second)

	got := rec.Of(isRenewal)
	wantCounts := []int{3, 3, 1, 3, 3, 1, 3, 3, 1}
	if len(got) != len(wantCounts) {
		t.Fatalf("%d renewal events %+v, want %d", len(got), got, len(wantCounts))
	}
	for i, e := range got {
		wantErr := error(nil)
		if i >= 6 {
			wantErr = errDown
		}
		if e.Engine != "fake" || e.Count != wantCounts[i] || e.Duration != 0 || e.Late || !errors.Is(e.Err, wantErr) || (wantErr == nil) != (e.Err == nil) {
			t.Errorf("renewal event %d = %+v, want Engine fake, Count %d, Duration 0, not late, Err %v", i, e, wantCounts[i], wantErr)
		}
		if at := epoch.Add(time.Duration(i/3+1) * time.Second); !e.Time.Equal(at) {
			t.Errorf("renewal event %d at %v, want %v", i, e.Time.Sub(epoch), at.Sub(epoch))
		}
	}
	if n := len(rec.Events()); n != len(got) {
		t.Errorf("%d events, want only the %d renewals (the leases have no observer)", n, len(got))
	}
}

// TestObservedDeadlineLoss: a lease lost by its deadline reports Lost with
// Lead = DriftMargin, the time left before the server could expire it;
// every failed renewal batch before it is reported.
func TestObservedDeadlineLoss(t *testing.T) {
	rec := recorder.New()
	h := newHarness(t, 10, keeper.Options{Observer: rec, Engine: "fake"})
	l := h.holdObserved("a", rec, 7)
	h.st.set(func(s *fakeStore) { s.renewErr = errDown })
	h.stepTo(ttl - margin)
	wantLost(t, l, keeper.ErrDeadline)

	lease := rec.Acquire(7)
	if kinds := recorder.Kinds(lease); !slices.Equal(kinds, []baton.EventKind{baton.EventSuspended, baton.EventLost}) {
		t.Fatalf("lease events %v, want [suspended lost]", kinds)
	}
	lost := lease[1]
	if lost.Lead != margin || !errors.Is(lost.Err, keeper.ErrDeadline) || lost.Recipe != "mutex" || lost.Name != "a" {
		t.Errorf("Lost event = %+v, want Lead %v, Err wrapping ErrDeadline, Recipe mutex, Name a", lost, margin)
	}
	renewals := rec.Of(isRenewal)
	if uint64(len(renewals)) != h.k.Stats().RenewFailures || len(renewals) == 0 {
		t.Fatalf("%d renewal events, want one per failed batch (%d)", len(renewals), h.k.Stats().RenewFailures)
	}
	for i, e := range renewals {
		if e.Count != 1 || !errors.Is(e.Err, errDown) || e.Late {
			t.Errorf("renewal event %d = %+v, want Count 1, Err %v, not late", i, e, errDown)
		}
	}
}

// TestObservedGoneLoss: a lease the server reports gone is Lost with Lead
// 0: the keeper learnt of it after the fact.
func TestObservedGoneLoss(t *testing.T) {
	rec := recorder.New()
	h := newHarness(t, 10, keeper.Options{Observer: rec, Engine: "fake"})
	l := h.holdObserved("a", rec, 8)
	h.st.set(func(s *fakeStore) { s.gone["a"] = true })
	h.stepTo(time.Second)
	wantLost(t, l, keeper.ErrGone)
	lease := rec.Acquire(8)
	if len(lease) != 1 || lease[0].Kind != baton.EventLost || lease[0].Lead != 0 || !errors.Is(lease[0].Err, keeper.ErrGone) {
		t.Errorf("lease events %+v, want one Lost with Lead 0 and Err wrapping ErrGone", lease)
	}
	if r := rec.Of(isRenewal); len(r) != 1 || r[0].Count != 1 || r[0].Err != nil {
		t.Errorf("renewal events %+v, want one answered batch of 1", r)
	}
}

// TestObservedLateAnswer: a batch the renewer stopped waiting for is
// reported failed after the wait (TTL/2), and again, Late, with its round
// trip when its answer comes.
func TestObservedLateAnswer(t *testing.T) {
	rec := recorder.New()
	h := newHarness(t, 10, keeper.Options{Observer: rec, Engine: "fake"})
	h.hold("a", 0)
	h.st.set(func(s *fakeStore) { s.holdRenew = true })
	h.idle = 1 // the renewer waits for the held Renew
	h.stepTo(time.Second)
	late := h.nextHeld()
	h.st.set(func(s *fakeStore) { s.holdRenew, s.renewErr = false, errDown })
	h.stepTo(2500*time.Millisecond - 1) // the renewer waits until TTL/2 after the send
	h.idle = 2
	h.stepTo(2600 * time.Millisecond)
	late.answer([]bool{true}, nil)
	h.waitFor("the late answer to be applied", func() bool { return h.k.Stats().LateAnswers == 1 })

	got := rec.Of(isRenewal)
	if len(got) < 3 {
		t.Fatalf("renewal events %+v, want the unanswered batch, its retries and the late answer", got)
	}
	if e := got[0]; e.Err == nil || errors.Is(e.Err, errDown) || e.Late || e.Duration != 1500*time.Millisecond || e.Count != 1 {
		t.Errorf("first renewal event %+v, want the wait's end after 1.5s: Err set (not %v), not late, Count 1", e, errDown)
	}
	last := got[len(got)-1]
	if !last.Late || last.Err != nil || last.Duration != 1600*time.Millisecond || last.Count != 1 {
		t.Errorf("last renewal event %+v, want the late answer: Late, no Err, Duration 1.6s, Count 1", last)
	}
	for i, e := range got[1 : len(got)-1] {
		if !errors.Is(e.Err, errDown) || e.Late {
			t.Errorf("retry event %d = %+v, want Err %v, not late", i+1, e, errDown)
		}
	}
}
