package kubelock_test

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/kubelock"
)

// offline is a client that never reaches a server: New does not touch it.
func offline(t *testing.T) *kubelock.Client {
	t.Helper()
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: "https://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	c, err := kubelock.NewClient(cs, "default", kubelock.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// TestLeaseNames checks the mapping of lock names to Lease names: a valid
// object name is kept (client-go's LeaseLock of that name is the same
// Lease), anything else becomes a valid one, readable and distinct.
func TestLeaseNames(t *testing.T) {
	c := offline(t)
	keep := []string{"my-controller", "a", "kube-scheduler", "orders.v2", strings.Repeat("a", 253)}
	for _, n := range keep {
		if got, err := c.LeaseName(n); err != nil || got != n {
			t.Errorf("LeaseName(%q) = %q, %v, want it unchanged", n, got, err)
		}
	}
	seen := map[string]string{}
	for _, tc := range []struct{ name, prefix string }{
		{"orders/42", "orders-42-"},
		{"Orders/42", "orders-42-"},
		{"A", "a-"},
		{"grüße/注文", "gr-e-"},
		{"--x--", "x-"},
		{"注文", "baton-"},
		{"a..b", "a-b-"},
		{strings.Repeat("a", 254), strings.Repeat("a", 200) + "-"},
		{strings.Repeat("n/", 400) + "end", "n-n-n-"},
		{"order:lock 42", "order-lock-42-"},
	} {
		got, err := c.LeaseName(tc.name)
		if err != nil {
			t.Errorf("LeaseName(%q) = %v", tc.name, err)
			continue
		}
		if errs := validation.IsDNS1123Subdomain(got); len(errs) > 0 {
			t.Errorf("LeaseName(%q) = %q: not an object name: %v", tc.name, got, errs)
		}
		if !strings.HasPrefix(got, tc.prefix) {
			t.Errorf("LeaseName(%q) = %q, want the readable prefix %q", tc.name, got, tc.prefix)
		}
		if other, dup := seen[got]; dup {
			t.Errorf("LeaseName(%q) = LeaseName(%q) = %q", tc.name, other, got)
		}
		seen[got] = tc.name
	}
	if _, err := c.LeaseName("a//b"); err == nil {
		t.Error("LeaseName of an invalid lock name = nil error")
	}
}

// TestOddNamesLock locks names that are no object names, the longest a
// lock name may be among them: each gets a Lease of its own that keeps the
// full name, and is labelled with the name's hash.
func TestOddNamesLock(t *testing.T) {
	t.Parallel()
	c := newClient(t, kubelock.Options{})
	base := lockName(t)
	names := []string{base + "/Upper Case", base + "/grüße/注文", base + "/" + strings.Repeat("x", baton.MaxNameLen-len(base)-1)}
	leases := map[string]bool{}
	for _, n := range names {
		m, err := c.Mutex(n)
		if err != nil {
			t.Fatalf("Mutex(%q) = %v", n, err)
		}
		l, err := m.TryLock(opCtx(t, 10*time.Second))
		if err != nil {
			t.Fatalf("TryLock(%q) = %v", n, err)
		}
		lease := getLease(t, c, n)
		if got := lease.Annotations["baton.dev/name"]; got != n {
			t.Errorf("Lease %s: baton.dev/name = %q, want %q", lease.Name, got, n)
		}
		if lease.Labels["baton.dev/lock"] == "" || lease.Labels["app.kubernetes.io/managed-by"] != "baton" {
			t.Errorf("Lease %s labels = %v, want baton.dev/lock and managed-by baton", lease.Name, lease.Labels)
		}
		if leases[lease.Name] {
			t.Errorf("two names share Lease %s", lease.Name)
		}
		leases[lease.Name] = true
		if holderOf(lease) != l.Owner() {
			t.Errorf("Lease %s holderIdentity = %q, want %q", lease.Name, holderOf(lease), l.Owner())
		}
		if err := l.Release(opCtx(t, 5*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
}
