package bench_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"text/tabwriter"
	"time"
)

// kubeLeaderMakers are the Kubernetes elections, each counting its
// candidates' requests into the counter it is given.
var kubeLeaderMakers = []struct {
	impl string
	make func(testing.TB, *kubeCounter) *leaderRig
}{{"baton", kubeLeaderRig}, {"client-go", clientGoLeaderRig}}

// TestKubeSmokeLeader runs two resign handoffs on each Kubernetes
// election: the next candidate must lead, with a larger epoch.
func TestKubeSmokeLeader(t *testing.T) {
	for _, mk := range kubeLeaderMakers {
		t.Run(mk.impl, func(t *testing.T) {
			r := mk.make(t, &kubeCounter{})
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			s, err := resignHandoffs(ctx, r, r.candidate(t, false), r.candidate(t, false), 2)
			if err != nil || len(s) != 2 {
				t.Fatalf("resignHandoffs(%s) = %d samples, %v; want 2, nil", mk.impl, len(s), err)
			}
		})
	}
}

// kubeReport is the Kubernetes section: uncontended lock+unlock of
// kubelock's Mutex beside the floor and client-go's LeaderElector used as
// a lock (interleaved rounds, as every uncontended row), and leader
// handoff after a release, kubelock's Election beside client-go's
// LeaderElector at the same lease duration. Reported, not judged: no
// target is set for this engine yet.
func kubeReport(t *testing.T, rounds int) (misses []string) {
	r := newKubeRig(t)
	res := interleaved(t, "kube", r.pairs, rounds)
	for _, p := range r.pairs {
		per, bd, err := requestsPerOp(r, p, 200)
		if err != nil {
			t.Fatalf("kube %s: counting requests: %v", p.what, err)
		}
		res[p.impl].reqOp, res[p.impl].breakMs = per, bd
	}
	var tw strings.Builder
	w := tabwriter.NewWriter(&tw, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "engine\tbaton µs/op\tfloor µs/op\tpeer µs/op\tbaton/floor\tbaton/peer\treq/op b·f·p\tallocs/op b·f·p\ttarget\t")
	fmt.Fprintf(w, "kube\t%s\t%s\t%s\t%s\t%s\t%s\t%s\treport\t\n", micros(res, "baton"), micros(res, "floor"), micros(res, "peer"),
		ratioOf(res, "baton", "floor"), ratioOf(res, "baton", "peer"), flights(true, res, "baton", "floor", "peer"),
		allocsOf(res, "baton", "floor", "peer"))
	w.Flush()
	recordRes("kube", res, "peer", "client-go LeaderElector")
	notes := spreads("kube", r.pairs, res)
	for _, p := range r.pairs {
		notes = append(notes, fmt.Sprintf("kube %s requests by verb over 200 ops: %v", p.impl, res[p.impl].breakMs))
	}

	const resigns = 40
	var hw strings.Builder
	hv := tabwriter.NewWriter(&hw, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(hv, "election\tsamples\tp50 ms\tp90 ms\tmax ms\trelease p50 ms\treq/handoff\tallocs/handoff\t")
	p50 := make(map[string]time.Duration)
	for _, mk := range kubeLeaderMakers {
		cnt := &kubeCounter{}
		lr := mk.make(t, cnt)
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
		a, b := lr.candidate(t, false), lr.candidate(t, false)
		n0, m0 := cnt.requests(), readMem()
		s, err := resignHandoffs(ctx, lr, a, b, resigns)
		m1, n1 := readMem(), cnt.requests()
		cancel()
		if err != nil {
			t.Fatalf("kube %s resign handoffs: %v", mk.impl, err)
		}
		allocs, _ := m1.perOp(m0, len(s))
		h := durations(s, func(s leaderSample) time.Duration { return s.handoff })
		st := durations(s, func(s leaderSample) time.Duration { return s.step })
		p50[mk.impl] = quantile(h, 0.5)
		fmt.Fprintf(hv, "%s\t%d\t%s\t%s\t%s\t%s\t%.1f\t%s\t\n", mk.impl, len(s), ms(quantile(h, 0.5)), ms(quantile(h, 0.9)),
			ms(quantile(h, 1)), ms(quantile(st, 0.5)), float64(n1-n0)/float64(len(s)), fmtAllocs(allocs))
	}
	hv.Flush()
	report(t, "kube", "Kubernetes (kube-apiserver, one Lease per implementation), uncontended lock+unlock, %d interleaved rounds "+
		"(baton: kubelock Mutex, TTL %v; floor: Get + conditional Update to acquire, Get + conditional Update to release; "+
		"peer: client-go LeaderElector with a LeaseLock and ReleaseOnCancel, a new one per op, Run until OnStartedLeading, then cancel and Run's return; "+
		"req/op: HTTP requests counted by a RoundTripper on the clients' rest.Config; allocs/op: the process's heap allocations per op over the timed loop, median over rounds):\n%s\n%s\n\n"+
		"leader handoff after a release, %d samples each: from the start of the leader's release (baton: Resign; client-go: cancel with ReleaseOnCancel, until Run returned) "+
		"to the next candidate leading (baton: Campaign's return; client-go: OnStartedLeading), the release made at a random point (uniform over %v, a waiting LeaderElector's longest poll interval) after the waiter's first read; release = that release's own duration; "+
		"req/handoff and allocs/handoff: both candidates' requests and the process's heap allocations over the handoffs, per handoff. "+
		"Lease duration %v on both; client-go's usual 15s/10s/2s scaled to it: RenewDeadline %v, RetryPeriod %v (a waiting LeaderElector polls; baton's waiter is woken by a watch); "+
		"p50 baton/client-go %.3f:\n%s",
		rounds, kubeTTL, tw.String(), strings.Join(notes, "\n"), resigns, kubePollMax, kubeTTL, kubeRenewDeadline, kubeRetryPeriod,
		float64(p50["baton"])/float64(p50["client-go"]), hw.String())
	return nil
}
