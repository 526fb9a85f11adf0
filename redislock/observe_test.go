package redislock_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/engine/leasekit/keeper"
	"github.com/baton-go/baton/internal/recorder"
	"github.com/baton-go/baton/redislock"
)

// TestObservedCutOff cuts a holder off the server (its fault proxy
// blackholes) while another client waits: the holder reports its grant,
// Suspended, then Lost by deadline with a positive Lead (declared before
// the key could expire on the server), and the failed renewal batches;
// the waiter reports its retries (refused, no error) and a grant with a
// larger token, after the holder's loss.
func TestObservedCutOff(t *testing.T) {
	t.Parallel()
	addr := redisAddr(t)
	admin := redisClient(t, addr)
	prefix := testPrefix(t, admin)
	holderRec, nextRec := recorder.New(), recorder.New()
	rdb, p := proxied(t, addr)
	holder := newClient(t, rdb, redislock.Options{Prefix: prefix, Observer: holderRec})
	next := newClient(t, redisClient(t, addr), redislock.Options{Prefix: prefix, Observer: nextRec})
	name := uniqueName("observed")

	l := lock(t, holder, name)
	time.Sleep(testTTL / 2) // at least one renewal
	if err := p.Blackhole(""); err != nil {
		t.Fatalf("Blackhole() = %v", err)
	}
	nl := lock(t, next, name)
	defer nl.Release(t.Context())
	select {
	case <-l.Done():
	case <-time.After(2 * testTTL):
		t.Fatalf("holder's lease %v after the cut and the next grant, want %v", l.State(), baton.Lost)
	}

	starts := holderRec.Of(func(e baton.Event) bool { return e.Kind == baton.EventAcquireStarted })
	if len(starts) != 1 {
		t.Fatalf("holder started %d acquires, want 1", len(starts))
	}
	h := holderRec.Acquire(starts[0].Acquire)
	want := []baton.EventKind{baton.EventAcquireStarted, baton.EventGranted, baton.EventSuspended, baton.EventLost}
	if kinds := recorder.Kinds(h); !slices.Equal(kinds, want) {
		t.Fatalf("holder's events %v, want %v", kinds, want)
	}
	lost := h[3]
	if !errors.Is(lost.Err, baton.ErrLost) || !errors.Is(lost.Err, keeper.ErrDeadline) {
		t.Errorf("holder's Lost Err = %v, want %v and %v", lost.Err, baton.ErrLost, keeper.ErrDeadline)
	}
	if lost.Lead <= 0 || lost.Lead > redislock.DriftMargin(holder) {
		t.Errorf("holder's Lost Lead = %v, want in (0, DriftMargin %v]", lost.Lead, redislock.DriftMargin(holder))
	}
	for _, e := range h[1:] {
		if e.Engine != "redis" || e.Recipe != "mutex" || e.Name != name || e.Token != l.Token() || e.Owner != l.Owner() {
			t.Errorf("holder's event %+v, want Engine redis, Recipe mutex, Name %s, Token %d, Owner %s", e, name, l.Token(), l.Owner())
		}
	}
	renewals := holderRec.Of(func(e baton.Event) bool { return e.Kind == baton.EventRenewal })
	var answered, failed int
	for _, e := range renewals {
		if e.Count != 1 || e.Engine != "redis" {
			t.Errorf("holder's renewal %+v, want Count 1, Engine redis", e)
		}
		if e.Err == nil {
			answered++
		} else {
			failed++
		}
	}
	if answered < 1 || failed < 1 {
		t.Errorf("holder's renewals: %d answered, %d failed, want some of each", answered, failed)
	}

	w := nextRec.Events()
	n := len(w)
	if n < 3 || w[0].Kind != baton.EventAcquireStarted || w[n-1].Kind != baton.EventGranted {
		t.Fatalf("next client's events %v, want acquire_started, acquire_retry…, granted", recorder.Kinds(w))
	}
	for i, e := range w[1 : n-1] {
		if e.Kind != baton.EventAcquireRetry || e.Attempt != i+1 || e.Position != -1 || e.Err != nil {
			t.Errorf("next client's event %d = %+v, want acquire_retry, Attempt %d, Position -1, no Err", i+1, e, i+1)
		}
	}
	if g := w[n-1]; g.Token != nl.Token() || g.Token <= l.Token() || g.Owner != nl.Owner() || g.Acquire != w[0].Acquire {
		t.Errorf("next grant %+v, want Token %d > %d, Owner %s", g, nl.Token(), l.Token(), nl.Owner())
	}
	if !lost.Time.Before(w[n-1].Time) {
		t.Errorf("holder Lost at %v, next granted at %v: want the loss first", lost.Time, w[n-1].Time)
	}
}
