package kubelock_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/engine"
	"github.com/baton-go/baton/kubelock"
)

// interopTTL is both sides' lease duration: whole seconds, which is all a
// LeaderElector writes.
const interopTTL = 2 * time.Second

// leaders tracks who believes it leads, and counts the samples in which
// both did.
type leaders struct {
	baton, elector atomic.Bool
	both, samples  atomic.Int64
	stop           chan struct{}
	done           chan struct{}
}

// watchLeaders samples both flags every 500µs until the test ends.
func watchLeaders(t *testing.T) *leaders {
	lf := &leaders{stop: make(chan struct{}), done: make(chan struct{})}
	go func() { // owned by the test: Cleanup stops it and waits
		defer close(lf.done)
		tk := time.NewTicker(500 * time.Microsecond)
		defer tk.Stop()
		for {
			select {
			case <-lf.stop:
				return
			case <-tk.C:
				lf.samples.Add(1)
				if lf.baton.Load() && lf.elector.Load() {
					lf.both.Add(1)
				}
			}
		}
	}()
	t.Cleanup(func() {
		close(lf.stop)
		<-lf.done
		t.Logf("%d samples, %d with two leaders", lf.samples.Load(), lf.both.Load())
		if n := lf.both.Load(); n > 0 {
			t.Errorf("baton and client-go both led in %d samples", n)
		}
	})
	return lf
}

// elector runs a client-go LeaderElector on Lease lease until its ctx is
// cancelled (releasing the Lease if release), flagging its leadership in
// lf. It returns a channel closed when Run has returned.
func elector(t *testing.T, ctx context.Context, lease, id string, release bool, lf *leaders) <-chan struct{} {
	t.Helper()
	cs, ns := admin(t)
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Name: lease, Namespace: ns},
		Client:     cs.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: id},
	}
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   interopTTL,
		RenewDeadline:   1500 * time.Millisecond,
		RetryPeriod:     200 * time.Millisecond,
		ReleaseOnCancel: release,
		Name:            id,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) {
				lf.elector.Store(true)
				<-ctx.Done()
				lf.elector.Store(false)
			},
			OnStoppedLeading: func() { lf.elector.Store(false) },
		},
	})
	if err != nil {
		t.Fatalf("NewLeaderElector: %v", err)
	}
	done := make(chan struct{})
	go func() { // owned by the test through ctx; Cleanup waits for it
		defer close(done)
		le.Run(ctx)
	}()
	t.Cleanup(func() { <-done })
	return done
}

// campaign runs a baton campaign on name, flagging its leadership in lf
// from the win until its context ends; Resign clears the flag first.
func campaign(t *testing.T, el *kubelock.Election, lf *leaders) <-chan *baton.Leader {
	out := make(chan *baton.Leader, 1)
	go func() { // owned by the test: it reads out
		ld, err := el.Campaign(opCtx(t, 60*time.Second))
		if err != nil {
			t.Errorf("baton Campaign = %v", err)
			out <- nil
			return
		}
		lf.baton.Store(true)
		go func() { <-ld.Context().Done(); lf.baton.Store(false) }()
		out <- ld
	}()
	return out
}

// interopLease is a Lease name both sides use as it is.
func interopLease() string { return "kubelock-interop-" + engine.NewOwnerID()[:10] }

// TestInteropBatonLeadsFirst: baton leads; a client-go LeaderElector on
// the same Lease does not lead while baton renews; after baton resigns it
// leads, and baton's next campaign waits for it.
func TestInteropBatonLeadsFirst(t *testing.T) {
	t.Parallel()
	lf := watchLeaders(t)
	c := newClient(t, kubelock.Options{TTL: interopTTL})
	lease := interopLease()
	el, err := c.Election(lease)
	if err != nil || el.Lease() != lease {
		t.Fatalf("Election(%q) = %v (Lease %q), want the Lease of that name", lease, err, el.Lease())
	}
	ld := <-campaign(t, el, lf)
	if ld == nil {
		t.FailNow()
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	elector(t, ctx, lease, "client-go-a", true, lf)
	time.Sleep(3 * interopTTL) // the elector retries, and must not lead
	if lf.elector.Load() {
		t.Fatalf("client-go leads while baton leads and renews")
	}
	lf.baton.Store(false)
	resigned := time.Now()
	if err := ld.Resign(opCtx(t, 5*time.Second), baton.ResignPlan{}); err != nil {
		t.Fatalf("Resign = %v", err)
	}
	if !eventually(5*time.Second, lf.elector.Load) {
		t.Fatalf("client-go does not lead 5s after baton resigned")
	}
	t.Logf("client-go leads %v after baton resigned", time.Since(resigned).Round(time.Millisecond))
	cand, err := el.Leader(opCtx(t, 5*time.Second))
	if err != nil || cand.ID != "client-go-a" {
		t.Errorf("baton's Leader() while client-go leads = %+v, %v, want client-go-a", cand, err)
	}
	// A baton candidate now waits for client-go, and leads after it.
	next := campaign(t, el, lf)
	time.Sleep(interopTTL)
	if lf.baton.Load() {
		t.Fatalf("baton leads while client-go leads")
	}
	cancel() // ReleaseOnCancel
	select {
	case ld2 := <-next:
		if ld2 == nil {
			t.FailNow()
		}
		if ld2.Epoch() <= ld.Epoch() {
			t.Errorf("epoch after client-go's term %d, want > %d", ld2.Epoch(), ld.Epoch())
		}
		lf.baton.Store(false)
		_ = ld2.Resign(opCtx(t, 5*time.Second), baton.ResignPlan{})
	case <-time.After(10 * time.Second):
		t.Fatal("baton does not lead 10s after client-go released")
	}
}

// TestInteropElectorLeadsFirst: a client-go LeaderElector leads; baton's
// Campaign waits, and wins once the elector released (ReleaseOnCancel),
// or, without a release, once its lease ran out as baton judges it.
func TestInteropElectorLeadsFirst(t *testing.T) {
	for _, tc := range []struct {
		name    string
		release bool
	}{{"Released", true}, {"Expired", false}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			lf := watchLeaders(t)
			c := newClient(t, kubelock.Options{TTL: interopTTL})
			lease := interopLease()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := elector(t, ctx, lease, "client-go-b", tc.release, lf)
			if !eventually(10*time.Second, lf.elector.Load) {
				t.Fatal("client-go does not lead a fresh Lease")
			}
			el, _ := c.Election(lease)
			won := campaign(t, el, lf)
			select {
			case <-won:
				t.Fatal("baton's Campaign returned while client-go leads")
			case <-time.After(3 * interopTTL):
			}
			in, err := c.Inspect(opCtx(t, 5*time.Second), lease)
			if err != nil || len(in.Entries) < 2 || !in.Entries[0].Foreign || in.Entries[0].Owner != "client-go-b" {
				t.Errorf("Inspect while client-go leads and baton waits = %+v, %v; want the foreign holder, then the waiter", in, err)
			}
			stopped := time.Now()
			cancel()
			<-done
			select {
			case ld := <-won:
				if ld == nil {
					t.FailNow()
				}
				took := time.Since(stopped)
				t.Logf("baton leads %v after client-go stopped (release %v)", took.Round(time.Millisecond), tc.release)
				if !tc.release && took < interopTTL-300*time.Millisecond {
					t.Errorf("baton led %v after client-go's last renewal, before its lease (%v) could run out", took, interopTTL)
				}
				lf.baton.Store(false)
				_ = ld.Resign(opCtx(t, 5*time.Second), baton.ResignPlan{})
			case <-time.After(10 * time.Second):
				t.Fatal("baton does not lead 10s after client-go stopped")
			}
		})
	}
}

// TestInteropBatonLost: baton leads through a fault proxy and is cut off;
// its leadership ends (context cancelled, Lost) before the client-go
// LeaderElector, judging the same Lease by the same rule, takes it over.
// It caught baton writing leaseDurationSeconds as the TTL alone: client-go
// compares records with whole-second times, so of two renewals in one
// second it saw the first only, counted the lease from up to a second too
// early, and led beside baton. Three rounds at once, so that the cut
// falls at different points of the second.
func TestInteropBatonLost(t *testing.T) {
	for round := range 3 {
		t.Run(fmt.Sprint(round), func(t *testing.T) {
			t.Parallel()
			lf := watchLeaders(t)
			c, p := proxied(t, kubelock.Options{TTL: interopTTL})
			lease := interopLease()
			el, _ := c.Election(lease)
			ld := <-campaign(t, el, lf)
			if ld == nil {
				t.FailNow()
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			elector(t, ctx, lease, "client-go-c", true, lf)
			time.Sleep(interopTTL + time.Duration(round)*300*time.Millisecond)
			if lf.elector.Load() {
				t.Fatal("client-go leads while baton leads and renews")
			}
			cut := time.Now()
			if err := p.Blackhole(""); err != nil {
				t.Fatal(err)
			}
			lost := make(chan time.Duration, 1)
			go func() { <-ld.Context().Done(); lost <- time.Since(cut) }() // ends with the leadership
			if !eventually(4*interopTTL, lf.elector.Load) {
				t.Fatalf("client-go does not lead %v after baton was cut off", 4*interopTTL)
			}
			led := time.Since(cut)
			select {
			case d := <-lost:
				t.Logf("baton's leadership ended %v after the cut, client-go leads %v after it", d.Round(time.Millisecond), led.Round(time.Millisecond))
			case <-time.After(time.Second):
				t.Fatalf("client-go leads (%v after the cut) while baton's leadership context is alive", led.Round(time.Millisecond))
			}
			if err := context.Cause(ld.Context()); !errors.Is(err, baton.ErrLost) {
				t.Errorf("baton's leadership ended with %v, want ErrLost", err)
			}
		})
	}
}
