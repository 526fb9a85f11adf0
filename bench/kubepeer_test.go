package bench_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	coordclient "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/baton-go/baton/engine"
	"github.com/baton-go/baton/kubelock"
)

// client-go's usual settings (LeaseDuration 15s, RenewDeadline 10s,
// RetryPeriod 2s) scaled to kubeTTL: RenewDeadline 2/3 and RetryPeriod
// 2/15 of the lease duration (2s: 1.333s and 267ms). A waiting
// LeaderElector reads the Lease every RetryPeriod, jittered up to
// 2.2×, and watches nothing: that poll is what its handoff waits for.
const (
	kubeRenewDeadline = kubeTTL * 2 / 3
	kubeRetryPeriod   = kubeTTL * 2 / 15
	// kubePollMax is a waiting LeaderElector's longest poll interval
	// (RetryPeriod jittered by leaderelection.JitterFactor): both
	// elections' handoffs are released at a random point of it (see
	// leaderRig.phase), as a leader's release comes at any point of its
	// waiters' polling. baton's waiters are woken by the watch, and poll
	// at most every TTL/4 besides.
	kubePollMax = kubeRetryPeriod * 22 / 10
)

// newKubeElector is a client-go LeaderElector with identity id on
// LeaseLock lease, released on cancel (ReleaseOnCancel).
func newKubeElector(cs kubernetes.Interface, ns, lease, id string, cb leaderelection.LeaderCallbacks) (*leaderelection.LeaderElector, error) {
	return leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Name: lease, Namespace: ns},
			Client:     cs.CoordinationV1(),
			LockConfig: resourcelock.ResourceLockConfig{Identity: id},
		},
		LeaseDuration:   kubeTTL,
		RenewDeadline:   kubeRenewDeadline,
		RetryPeriod:     kubeRetryPeriod,
		ReleaseOnCancel: true,
		Name:            id,
		Callbacks:       cb,
	})
}

// electorRun is one LeaderElector.Run: started is closed when it leads
// (OnStartedLeading), done when Run has returned (its release written).
type electorRun struct {
	cancel  context.CancelFunc
	started chan struct{}
	ended   chan struct{} // its leadership's context ended
	done    chan struct{}
}

// runElector starts a LeaderElector on lease and returns at once; the
// run's owner stops it with cancel and waits for done.
func runElector(cs kubernetes.Interface, ns, lease, id string) (*electorRun, error) {
	r := &electorRun{started: make(chan struct{}), ended: make(chan struct{}), done: make(chan struct{})}
	le, err := newKubeElector(cs, ns, lease, id, leaderelection.LeaderCallbacks{
		OnStartedLeading: func(ctx context.Context) {
			close(r.started)
			<-ctx.Done()
			close(r.ended)
		},
		OnStoppedLeading: func() {},
	})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(quietCtx(context.Background()))
	r.cancel = cancel
	go func() { // owned by the run: cancel ends it, done says so
		defer close(r.done)
		le.Run(ctx)
	}()
	return r, nil
}

// stop cancels the run and waits for Run to return: with ReleaseOnCancel
// the Lease is released by then.
func (r *electorRun) stop() {
	r.cancel()
	<-r.done
}

// await waits until the run leads, Run returns without leading, or ctx
// ends; on failure the run is stopped.
func (r *electorRun) await(ctx context.Context) error {
	select {
	case <-r.started:
		return nil
	case <-r.done:
		r.cancel()
		return errors.New("LeaderElector.Run returned without leading")
	case <-ctx.Done():
		r.stop()
		return ctx.Err()
	}
}

// kubePeer is client-go's LeaderElector used as a lock: lock starts a new
// LeaderElector (LeaseLock, ReleaseOnCancel) and returns when it leads;
// unlock cancels it and waits for Run's return, its release written. An
// uncontended acquire is not paced by RetryPeriod (its first attempt is
// immediate), but Run also starts a renewal at once, which the cancel
// usually cuts short: Get + Update to acquire, an Update to renew (cut or
// not), Get + Update to release.
func kubePeer(cs kubernetes.Interface, ns string, admin coordclient.LeaseInterface) *pair {
	lease, id := kubeLeaseName("client-go"), "client-go-"+engine.NewOwnerID()[:8]
	var run *electorRun
	return &pair{impl: "peer", what: "client-go LeaderElector (LeaseLock, ReleaseOnCancel): Run until it leads, cancel, Run returns",
		entries: leaseHolders(admin, lease),
		lock: func(ctx context.Context) (err error) {
			if run, err = runElector(cs, ns, lease, id); err != nil {
				return err
			}
			return run.await(ctx)
		},
		unlock: func(context.Context) error { run.stop(); return nil }}
}

// kubeLeaderRig is baton's kubelock Election: each candidate on a client
// and a clientset of its own, every request counted by cnt.
func kubeLeaderRig(tb testing.TB, cnt *kubeCounter) *leaderRig {
	tb.Helper()
	lease := kubeLeaseName("election")
	admin, ns := kubeClientset(tb)
	r := &leaderRig{engine: "kube", ttl: kubeTTL, phase: kubePollMax}
	r.candidate = func(tb testing.TB, killable bool) *candidate {
		if killable {
			tb.Fatal("kube leader rig: no killable candidates")
		}
		cs, _ := kubeClientset(tb, cnt)
		c, err := kubelock.New(cs, ns, kubelock.Options{TTL: kubeTTL})
		if err != nil {
			tb.Fatalf("kubelock.New: %v", err)
		}
		tb.Cleanup(func() { _ = c.Close() })
		el, err := c.Election(lease)
		if err != nil {
			tb.Fatalf("Election(%q): %v", lease, err)
		}
		return &candidate{campaign: batonCampaign(el)}
	}
	holders := leaseHolders(admin.CoordinationV1().Leases(ns), lease)
	r.entries = func(ctx context.Context) (int, error) {
		n, err := holders(ctx)
		if err != nil || n == 0 {
			return n, err
		}
		l, err := admin.CoordinationV1().Leases(ns).Get(ctx, lease, metav1.GetOptions{})
		if err != nil {
			return 0, err
		}
		w, _ := strconv.Atoi(l.Annotations["baton.dev/waiters"])
		return n + w, nil
	}
	return r
}

// clientGoLeaderRig is client-go's LeaderElector (LeaseLock,
// ReleaseOnCancel; see kubeRetryPeriod), each candidate on a clientset of
// its own, every request counted by cnt. A waiting LeaderElector leaves
// no mark on the Lease: entries counts the leader and each campaigning
// candidate that has read the Lease since its campaign began. Its epoch
// is the Lease's leaseTransitions, read once the candidate leads (after
// the time the handoff is measured to).
func clientGoLeaderRig(tb testing.TB, cnt *kubeCounter) *leaderRig {
	tb.Helper()
	lease := kubeLeaseName("client-go-election")
	admin, ns := kubeClientset(tb)
	leases := admin.CoordinationV1().Leases(ns)
	r := &leaderRig{engine: "client-go", ttl: kubeTTL, phase: kubePollMax}
	var waiting []func() bool // per candidate: campaigning and has read
	r.candidate = func(tb testing.TB, killable bool) *candidate {
		if killable {
			tb.Fatal("client-go leader rig: no killable candidates")
		}
		own := &kubeCounter{}
		cs, _ := kubeClientset(tb, cnt, own)
		id := "client-go-" + engine.NewOwnerID()[:8]
		var from atomic.Int64 // own's count when the campaign began, -1 when none runs
		from.Store(-1)
		waiting = append(waiting, func() bool { f := from.Load(); return f >= 0 && own.requests() > f })
		return &candidate{campaign: func(ctx context.Context) (leadership, error) {
			from.Store(own.requests())
			defer from.Store(-1)
			run, err := runElector(cs, ns, lease, id)
			if err != nil {
				return leadership{}, err
			}
			if err := run.await(ctx); err != nil {
				return leadership{}, err
			}
			won := time.Now()
			l, err := leases.Get(ctx, lease, metav1.GetOptions{})
			if err != nil || l.Spec.LeaseTransitions == nil {
				run.stop()
				return leadership{}, fmt.Errorf("reading the epoch: %v", err)
			}
			return leadership{won: won, epoch: uint64(*l.Spec.LeaseTransitions), ended: run.ended,
				resign: func(context.Context) error { run.stop(); return nil }}, nil
		}}
	}
	holders := leaseHolders(leases, lease)
	r.entries = func(ctx context.Context) (int, error) {
		n, err := holders(ctx)
		for _, w := range waiting {
			if w() {
				n++
			}
		}
		return n, err
	}
	return r
}
