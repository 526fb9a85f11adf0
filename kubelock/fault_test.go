package kubelock_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/baton-go/baton"
)

// The server-fault drills: the kube_fault set's API server killed and
// restarted, its etcd frozen, while a holder holds and a waiter waits. A
// fault longer than the lease deposes the holder: it must be told Lost
// before the waiter is granted, the waiter's token must be larger, and a
// late write of the deposed holder must be refused by the fenced resource
// and accepted by its unfenced twin (the negative control: it proves the
// fault left a deposed holder with a write to send). A fault well within
// the lease must depose nobody: the holder stays Held (or Suspended, then
// Held), and the waiter is granted nothing. The drills run one at a time
// (never t.Parallel): each breaks the set's one server.

// faultTTL is the lease time of the deposing drills.
const faultTTL = 1500 * time.Millisecond

// faultTrials is the number of seeded trials of each deposing drill.
const faultTrials = 3

// faultSeed is the base seed of the drills' random timings:
// BATON_FAULT_SEED replays a logged run.
func faultSeed(t *testing.T) uint64 {
	if s := os.Getenv("BATON_FAULT_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("BATON_FAULT_SEED=%q: %v", s, err)
		}
		return v
	}
	return uint64(time.Now().UnixNano())
}

// trials runs fn faultTrials times, each with a random source of its own
// seed, logged.
func trials(t *testing.T, n int, fn func(t *testing.T, rng *rand.Rand)) {
	base := faultSeed(t)
	for i := range n {
		seed := base + uint64(i)
		t.Run("seed="+strconv.FormatUint(seed, 10), func(t *testing.T) {
			fn(t, rand.New(rand.NewPCG(seed, seed)))
		})
	}
}

// TestFaultAPIServerRestartDeposes kills the API server and restarts it
// after more than the lease time: the holder cannot renew, is told Lost,
// and the waiter takes over after the restart.
func TestFaultAPIServerRestartDeposes(t *testing.T) {
	f := requireFaultSet(t)
	trials(t, faultTrials, func(t *testing.T, rng *rand.Rand) {
		runDeposing(t, f, rng, func() string {
			f.killAPIServer(t)
			down := faultTTL + jitter(rng, faultTTL)
			time.Sleep(down)
			f.startAPIServer(t)
			ready, err := f.waitReady(60 * time.Second)
			if err != nil {
				t.Fatalf("the apiserver did not come back: %v", err)
			}
			return "down " + down.Round(time.Millisecond).String() + ", then ready in " + ready.Round(time.Millisecond).String()
		})
	})
}

// TestFaultEtcdFrozenDeposes freezes the API server's etcd for two to
// three lease times: the server takes requests it cannot answer, the
// holder's renewals go unconfirmed, it is told Lost, and the waiter takes
// over once etcd runs again.
func TestFaultEtcdFrozenDeposes(t *testing.T) {
	f := requireFaultSet(t)
	trials(t, faultTrials, func(t *testing.T, rng *rand.Rand) {
		runDeposing(t, f, rng, func() string {
			d := 2*faultTTL + jitter(rng, faultTTL)
			f.freezeEtcd(t, d)
			return "etcd frozen " + d.Round(time.Millisecond).String()
		})
	})
}

// grant is what an acquire returned.
type grant struct {
	l   *baton.Lease
	err error
}

// lockRetrying locks m until it is granted or ctx ends: a waiter cut off
// from the server for a whole TTL fails (ErrSessionLost, ErrUnavailable),
// and an application would try again, as this does.
func lockRetrying(ctx context.Context, m interface {
	Lock(context.Context) (*baton.Lease, error)
}) grant {
	for {
		l, err := m.Lock(ctx)
		if err == nil || ctx.Err() != nil {
			return grant{l, err}
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// runDeposing runs one deposing trial: fault (which returns what it did)
// strikes at a random phase of the holder's renewals.
func runDeposing(t *testing.T, f *faultSet, rng *rand.Rand, fault func() string) {
	start := time.Now()
	hrec, wrec := &recorder{}, &recorder{}
	holder, waiter := f.client(t, faultTTL, hrec), f.client(t, faultTTL, wrec)
	name := lockName(t)
	m1, _ := holder.Mutex(name)
	m2, _ := waiter.Mutex(name)
	l1, err := m1.Lock(opCtx(t, 10*time.Second))
	if err != nil {
		t.Fatalf("holder's Lock = %v", err)
	}
	res := newResources(t)
	if fe, ok, err := res.write(l1.Context(), name, l1.Token(), l1.Owner()); fe != nil || !ok || err != nil {
		t.Fatalf("holder's first write: fenced %v, unfenced accepted %v, error %v", fe, ok, err)
	}
	got := make(chan grant, 1)
	go func() { got <- lockRetrying(opCtx(t, 90*time.Second), m2) }() // owned here: read below
	time.Sleep(faultTTL/2 + jitter(rng, faultTTL/3))                  // the waiter queues; the fault's phase
	did := fault()
	g := <-got
	if g.err != nil {
		t.Fatalf("%s: waiter's Lock = %v", did, g.err)
	}
	defer func() { _ = g.l.Release(opCtx(t, 10*time.Second)) }()
	if !eventually(3*faultTTL, func() bool { return l1.State() == baton.Lost }) {
		t.Fatalf("%s: holder State() = %v after the waiter's grant, want Lost", did, l1.State())
	}
	if !errors.Is(leaseCause(l1), baton.ErrLost) {
		t.Errorf("deposed holder's cause = %v, want ErrLost", leaseCause(l1))
	}
	lost, granted := hrec.of(baton.EventLost), wrec.of(baton.EventGranted)
	if len(lost) != 1 || len(granted) != 1 {
		t.Fatalf("%s: %d Lost events of the holder, %d grants of the waiter; want 1 and 1", did, len(lost), len(granted))
	}
	lease, err := f.admin.CoordinationV1().Leases(f.ns).Get(opCtx(t, 10*time.Second), mustLeaseName(t, waiter, name), metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get the Lease: %v", err)
	}
	if holderOf(lease) != g.l.Owner() || lease.Spec.AcquireTime == nil {
		t.Fatalf("Lease holder %q, acquireTime %v; want the waiter %q", holderOf(lease), lease.Spec.AcquireTime, g.l.Owner())
	}
	// Both on this process's clock: the monotonic reading against the
	// grant's return, the wall reading against the acquireTime the waiter
	// stamped on the Lease before it sent the granting update.
	lostToGrant := granted[0].at.Sub(lost[0].at)
	lostToDecision := lease.Spec.AcquireTime.Time.Sub(lost[0].at.Round(0))
	if lostToGrant <= 0 || lostToDecision <= 0 {
		t.Errorf("%s: holder told Lost %v after the waiter's grant returned, %v after the waiter decided to grant: two holders",
			did, -lostToGrant, -lostToDecision)
	}
	if g.l.Token() <= l1.Token() {
		t.Errorf("%s: token after the fault %d, want > %d", did, g.l.Token(), l1.Token())
	}
	if fe, ok, err := res.write(g.l.Context(), name, g.l.Token(), g.l.Owner()); fe != nil || !ok || err != nil {
		t.Fatalf("new holder's write: fenced %v, unfenced accepted %v, error %v", fe, ok, err)
	}
	// The deposed holder's late write: a holder that never learnt of its
	// loss (paused, cut off) still sends it, on a live context.
	fe, unfencedOK, err := res.write(context.Background(), name, l1.Token(), l1.Owner())
	if err != nil {
		t.Fatalf("the late write: %v", err)
	}
	if !errors.Is(fe, baton.ErrStaleToken) {
		t.Errorf("%s: the fenced resource took the deposed holder's late write (token %d after %d): %v", did, l1.Token(), g.l.Token(), fe)
	}
	if !unfencedOK {
		t.Errorf("%s: the unfenced twin refused the late write: the negative control did not go red", did)
	}
	t.Logf("%s: token %d -> %d; holder Lost (lead %v) %v before the grant returned, %v before the waiter's acquireTime; "+
		"late write: fenced refused=%v, unfenced accepted=%v; trial took %v",
		did, l1.Token(), g.l.Token(), lost[0].e.Lead.Round(time.Millisecond), lostToGrant.Round(time.Millisecond),
		lostToDecision.Round(time.Millisecond), errors.Is(fe, baton.ErrStaleToken), unfencedOK, time.Since(start).Round(time.Millisecond))
}

func mustLeaseName(t *testing.T, c interface{ LeaseName(string) (string, error) }, name string) string {
	t.Helper()
	obj, err := c.LeaseName(name)
	if err != nil {
		t.Fatalf("LeaseName(%q) = %v", name, err)
	}
	return obj
}

// jitter is a random duration in [0, d).
func jitter(rng *rand.Rand, d time.Duration) time.Duration {
	return time.Duration(rng.Int64N(int64(d)))
}
