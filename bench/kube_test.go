package bench_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	coordv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	coordclient "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/batontest/testenv"
	"github.com/baton-go/baton/engine"
	"github.com/baton-go/baton/kubelock"
)

// kubeTTL is the lease time on every Kubernetes row: baton's TTL and the
// LeaderElectors' LeaseDuration, whole seconds because that is all a
// Lease's leaseDurationSeconds (and so client-go) can say.
const kubeTTL = 2 * time.Second

// kubeCounter counts the HTTP requests of one rest.Config's clients, on
// the client's side of the wire, by verb (a watch is a GET with
// watch=true, counted apart). It allocates nothing per request, so that
// the timed pairs can go through it.
type kubeCounter struct{ get, watch, put, post, other atomic.Int64 }

// countingTransport counts each request into every one of its counters.
type countingTransport struct {
	cs   []*kubeCounter
	next http.RoundTripper
}

func (t countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	for _, c := range t.cs {
		c.count(req)
	}
	return t.next.RoundTrip(req)
}

func (c *kubeCounter) count(req *http.Request) {
	switch {
	case req.Method == http.MethodGet && strings.Contains(req.URL.RawQuery, "watch=true"):
		c.watch.Add(1)
	case req.Method == http.MethodGet:
		c.get.Add(1)
	case req.Method == http.MethodPut:
		c.put.Add(1)
	case req.Method == http.MethodPost:
		c.post.Add(1)
	default:
		c.other.Add(1)
	}
}

// requests is the running count of every request.
func (c *kubeCounter) requests() int64 {
	return c.get.Load() + c.watch.Load() + c.put.Load() + c.post.Load() + c.other.Load()
}

// snapshot is the count by verb.
func (c *kubeCounter) snapshot() map[string]int64 {
	return map[string]int64{"GET": c.get.Load(), "WATCH": c.watch.Load(), "PUT": c.put.Load(), "POST": c.post.Load(), "other": c.other.Load()}
}

// kubeConfig is the test apiserver's admin configuration as baton.Open
// makes it (client-go's rate limiter off, protobuf), with every request
// counted by each of cs, and its namespace.
func kubeConfig(tb testing.TB, cs ...*kubeCounter) (*rest.Config, string) {
	tb.Helper()
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: testenv.K8s(tb)}, &clientcmd.ConfigOverrides{})
	rc, err := cc.ClientConfig()
	if err != nil {
		tb.Fatalf("kubeconfig: %v", err)
	}
	ns, _, err := cc.Namespace()
	if err != nil {
		tb.Fatalf("kubeconfig namespace: %v", err)
	}
	rc.QPS, rc.Burst = -1, 0
	rc.ContentType = runtime.ContentTypeProtobuf
	rc.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	if len(cs) > 0 {
		rc.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return countingTransport{cs, rt} }
	}
	return rc, ns
}

// kubeClientset is a clientset on kubeConfig(tb, counters...).
func kubeClientset(tb testing.TB, counters ...*kubeCounter) (kubernetes.Interface, string) {
	tb.Helper()
	rc, ns := kubeConfig(tb, counters...)
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		tb.Fatalf("kubernetes.NewForConfig: %v", err)
	}
	return cs, ns
}

// kubeLeaseName is a Lease name of its own per run (a valid object name:
// client-go's LeaseLock and baton then share it as it is).
func kubeLeaseName(kind string) string {
	return "baton-bench-" + kind + "-" + engine.NewOwnerID()[:10]
}

// quietCtx is ctx with a logger that drops client-go's leaderelection
// lines ("Attempting to acquire leader lease…", one per op).
func quietCtx(ctx context.Context) context.Context { return klog.NewContext(ctx, logr.Discard()) }

// newKubeRig is the Kubernetes rig: baton's kubelock Mutex, the floor and
// client-go's LeaderElector, each on a Lease of its own, all through one
// clientset whose requests are counted (the counter allocates nothing).
// baton's lock name is a valid object name, the Lease's own, as the
// others' are.
func newKubeRig(tb testing.TB) *rig {
	tb.Helper()
	cnt := &kubeCounter{}
	cs, ns := kubeClientset(tb, cnt)
	admin, _ := kubeClientset(tb)
	leases := admin.CoordinationV1().Leases(ns)
	b := kubeBaton(tb, cs, ns, leases, kubeLeaseName("mutex"))
	return &rig{engine: "kube", requests: func() (int64, error) { return cnt.requests(), nil }, breakdown: cnt.snapshot,
		pairs: []*pair{b, kubeFloor(cs.CoordinationV1().Leases(ns), leases), kubePeer(cs, ns, leases)}}
}

// kubeBaton is kubelock's Mutex called name, on a client of its own on
// cs, as a pair; admin reads its Lease.
func kubeBaton(tb testing.TB, cs kubernetes.Interface, ns string, admin coordclient.LeaseInterface, name string) *pair {
	tb.Helper()
	c, err := kubelock.New(cs, ns, kubelock.Options{TTL: kubeTTL})
	if err != nil {
		tb.Fatalf("kubelock.New: %v", err)
	}
	tb.Cleanup(func() { _ = c.Close() })
	m, err := c.Mutex(name)
	if err != nil {
		tb.Fatalf("Mutex(%q): %v", name, err)
	}
	lo, ok := baton.As[interface{ Lease() string }](m) // the Lease object's name is kube's own
	if !ok {
		tb.Fatalf("baton.As(%q) has no Lease()", name)
	}
	var held *baton.Lease
	return &pair{impl: "baton", what: "kubelock Mutex Lock + Release",
		lock:    func(ctx context.Context) (err error) { held, err = m.Lock(ctx); return err },
		unlock:  func(ctx context.Context) error { return held.Release(ctx) },
		entries: leaseHolders(admin, lo.Lease()),
		check: func() error {
			if held.Token() == 0 {
				return fmt.Errorf("lease has token 0")
			}
			return nil
		}}
}

// leaseHolders reads Lease name through an uncounted client: 1 when it
// names a holder, 0 when it names none or does not exist.
func leaseHolders(leases coordclient.LeaseInterface, name string) func(context.Context) (int, error) {
	return func(ctx context.Context) (int, error) {
		l, err := leases.Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return 0, nil
		case err != nil:
			return 0, err
		case l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != "":
			return 1, nil
		}
		return 0, nil
	}
}

// kubeFloor is the least a correct Lease lock does, as kubelock and
// client-go's LeaderElector (v0.37's tryAcquireOrRenew and tryRelease)
// both do it: every write is decided on a fresh read and made conditional
// on the resourceVersion read, so acquire is a Get (the Lease is free:
// no holder) + an Update taking it (holder, acquire and renew times,
// duration, transitions + 1: the transitions count is the token), and
// release a Get (still ours) + an Update clearing the holder, as
// client-go's release writes it. 4 requests (the first lock of a new
// Lease is a Get + Create). A client that trusted its own last reply
// could release with the Update alone (a Conflict would send it back to
// a read): 3; neither kubelock nor client-go does.
func kubeFloor(leases, admin coordclient.LeaseInterface) *pair {
	name, id := kubeLeaseName("floor"), "floor-"+engine.NewOwnerID()[:8]
	dur := int32(kubeTTL / time.Second)
	p := &pair{impl: "floor", what: "Get + conditional Update to acquire, Get + conditional Update to release", entries: leaseHolders(admin, name)}
	p.lock = func(ctx context.Context) error {
		now := metav1.NewMicroTime(time.Now())
		l, err := leases.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			_, err = leases.Create(ctx, &coordv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name},
				Spec: coordv1.LeaseSpec{HolderIdentity: &id, AcquireTime: &now, RenewTime: &now, LeaseDurationSeconds: &dur}}, metav1.CreateOptions{})
			return err
		}
		if err != nil {
			return err
		}
		if h := l.Spec.HolderIdentity; h != nil && *h != "" {
			return fmt.Errorf("floor: Lease %s held by %q", name, *h)
		}
		tr := int32(1)
		if l.Spec.LeaseTransitions != nil {
			tr = *l.Spec.LeaseTransitions + 1
		}
		l.Spec = coordv1.LeaseSpec{HolderIdentity: &id, AcquireTime: &now, RenewTime: &now, LeaseDurationSeconds: &dur, LeaseTransitions: &tr}
		_, err = leases.Update(ctx, l, metav1.UpdateOptions{})
		return err
	}
	p.unlock = func(ctx context.Context) error {
		l, err := leases.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if h := l.Spec.HolderIdentity; h == nil || *h != id {
			return fmt.Errorf("floor: Lease %s no longer ours", name)
		}
		now, empty, one := metav1.NewMicroTime(time.Now()), "", int32(1)
		l.Spec.HolderIdentity, l.Spec.LeaseDurationSeconds, l.Spec.RenewTime, l.Spec.AcquireTime = &empty, &one, &now, &now
		_, err = leases.Update(ctx, l, metav1.UpdateOptions{})
		return err
	}
	return p
}

// TestKubeSmoke checks that every measured Kubernetes operation really
// locks and unlocks: after lock its Lease names a holder (and baton's
// lease has a token), after unlock none.
func TestKubeSmoke(t *testing.T) { smokeRig(t, newKubeRig(t)) }
