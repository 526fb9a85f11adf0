package kubelock_test

import (
	"context"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	coordv1 "k8s.io/api/coordination/v1"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/batontest"
	"github.com/baton-go/baton/batontest/testenv"
	"github.com/baton-go/baton/engine"
	"github.com/baton-go/baton/faultproxy"
	"github.com/baton-go/baton/kubelock"
)

// testTTL is the lease time of the tests: short, so that losses and
// expiries come within seconds.
const testTTL = 1500 * time.Millisecond

// kubeconfig loads path's current context: its client configuration, with
// client-go's rate limiter off, and its namespace.
func kubeconfig(t testing.TB, path string) (*rest.Config, string) {
	t.Helper()
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: path}, &clientcmd.ConfigOverrides{})
	rc, err := cc.ClientConfig()
	if err != nil {
		t.Fatalf("kubeconfig %s: %v", path, err)
	}
	ns, _, err := cc.Namespace()
	if err != nil {
		t.Fatalf("kubeconfig %s: namespace: %v", path, err)
	}
	rc.QPS, rc.Burst = -1, 0
	rc.ContentType = "application/vnd.kubernetes.protobuf"
	return rc, ns
}

// admin returns a clientset of the admin kubeconfig and its namespace.
func admin(t testing.TB) (kubernetes.Interface, string) {
	t.Helper()
	rc, ns := kubeconfig(t, testenv.K8s(t))
	return clientset(t, rc), ns
}

func clientset(t testing.TB, rc *rest.Config) kubernetes.Interface {
	t.Helper()
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatalf("kubernetes.NewForConfig: %v", err)
	}
	return cs
}

// newClient returns a client on the admin kubeconfig, closed at the end
// of the test.
func newClient(t testing.TB, o kubelock.Options) *kubelock.Client {
	t.Helper()
	cs, ns := admin(t)
	return clientOn(t, cs, ns, o)
}

func clientOn(t testing.TB, cs kubernetes.Interface, ns string, o kubelock.Options) *kubelock.Client {
	t.Helper()
	if o.TTL == 0 {
		o.TTL = testTTL
	}
	c, err := kubelock.NewClient(cs, ns, o)
	if err != nil {
		t.Fatalf("kubelock.New: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// proxied returns a client that reaches the apiserver through a fault
// proxy of its own, and the proxy: its Host is the proxy's address, its
// TLS still verifies the apiserver's certificate for the real host.
func proxied(t testing.TB, o kubelock.Options) (*kubelock.Client, *faultproxy.Proxy) {
	t.Helper()
	rc, ns := kubeconfig(t, testenv.K8s(t))
	p, err := faultproxy.Start(testenv.K8sAddr(t))
	if err != nil {
		t.Fatalf("faultproxy.Start: %v", err)
	}
	t.Cleanup(p.Close)
	if u, err := url.Parse(rc.Host); err == nil && rc.TLSClientConfig.ServerName == "" {
		rc.TLSClientConfig.ServerName = u.Hostname()
	}
	rc.Host = "https://" + p.Addr
	// A blackholed proxy holds dials and requests: bound the dial, and
	// let the calls' contexts bound the rest.
	rc.Dial = (&net.Dialer{Timeout: time.Second}).DialContext
	return clientOn(t, clientset(t, rc), ns, o), p
}

// lockName returns a lock name unique to this run of the test.
func lockName(t testing.TB) string {
	return "kubelock-test/" + strings.ReplaceAll(t.Name(), "/", "-") + "/" + engine.NewOwnerID()[:8]
}

// opCtx is a bounded context for one blocking call.
func opCtx(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// getLease reads the Lease of lock name through the admin clientset.
func getLease(t testing.TB, c *kubelock.Client, name string) *coordv1.Lease {
	t.Helper()
	cs, ns := admin(t)
	obj, err := c.LeaseName(name)
	if err != nil {
		t.Fatalf("LeaseName(%q) = %v", name, err)
	}
	l, err := cs.CoordinationV1().Leases(ns).Get(opCtx(t, 5*time.Second), obj, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get Lease %s: %v", obj, err)
	}
	return l
}

// holderOf is a Lease's spec.holderIdentity, "" when unset.
func holderOf(l *coordv1.Lease) string {
	if l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// eventually is batontest.Eventually.
var eventually = batontest.Eventually

// leaseCause is the cause of l's context.
func leaseCause(l *baton.Lease) error { return context.Cause(l.Context()) }
