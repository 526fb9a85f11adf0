package kubelock_test

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/batontest/testenv"
	"github.com/baton-go/baton/kubelock"
)

// TestCheckURL checks k8s:// URLs offline: what Open will refuse is
// refused here, as a usage error (baton.ErrInvalidOption).
func TestCheckURL(t *testing.T) {
	for _, ok := range []string{
		"k8s://",
		"k8s:///",
		"k8s://?namespace=locks",
		"k8s://?kubeconfig=/etc/kube.conf",
		"k8s://?kubeconfig=/etc/kube.conf&context=prod&namespace=locks",
		"k8s://?context=prod",
		"k8s://apiserver:6443?kubeconfig=/etc/kube.conf",
		"k8s://127.0.0.1:16443",
	} {
		if err := baton.CheckURL(ok); err != nil {
			t.Errorf("CheckURL(%q) = %v, want nil", ok, err)
		}
	}
	for _, bad := range []string{
		"k8s://apiserver",
		"k8s://a:6443,b:6443?kubeconfig=x",
		"k8s://user:secret@/?kubeconfig=x",
		"k8s://?server=https://x",
		"k8s://?namespace=Not_A_Namespace",
		"k8s://?kubeconfig=",
		"k8s://?kubeconfig=a&kubeconfig=b",
		"k8s:///some/path",
	} {
		err := baton.CheckURL(bad)
		if !errors.Is(err, baton.ErrInvalidOption) {
			t.Errorf("CheckURL(%q) = %v, want an error wrapping ErrInvalidOption", bad, err)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("CheckURL(%q) = %v: the password is in the message", bad, err)
		}
	}
	if err := baton.CheckURL("k8s://?kubeconfig=/x", baton.WithTTL(1500*time.Microsecond)); !errors.Is(err, baton.ErrInvalidOption) {
		t.Errorf("CheckURL with a TTL of 1.5ms = %v, want ErrInvalidOption", err)
	}
}

// TestOpen opens a kubeconfig's URL: the client is the kube engine and
// locks.
func TestOpen(t *testing.T) {
	t.Parallel()
	path := testenv.K8s(t)
	c, err := baton.Open(opCtx(t, 10*time.Second), "k8s://?kubeconfig="+path, baton.WithTTL(testTTL))
	if err != nil {
		t.Fatalf("Open = %v", err)
	}
	defer func() { _ = c.Close() }()
	if c.Engine() != "kube" {
		t.Errorf("Engine() = %q, want kube", c.Engine())
	}
	kc, ok := baton.As[*kubelock.Client](c)
	if !ok || kc.Namespace() == "" {
		t.Fatalf("baton.As[*kubelock.Client] = %v, %v", kc, ok)
	}
	m, err := c.Mutex(lockName(t))
	if err != nil {
		t.Fatal(err)
	}
	l, err := m.Lock(opCtx(t, 10*time.Second))
	if err != nil {
		t.Fatalf("Lock = %v", err)
	}
	if l.Engine() != "kube" {
		t.Errorf("lease Engine() = %q, want kube", l.Engine())
	}
	if err := l.Release(opCtx(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
}

// TestUnavailable points a client at a port nobody listens on: Open fails
// within its connect timeout, and an acquire on a clientset made by hand
// fails, both with errors wrapping baton.ErrUnavailable.
func TestUnavailable(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	_ = ln.Close()

	cfg, err := clientcmd.LoadFromFile(testenv.K8s(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, cl := range cfg.Clusters {
		cl.Server = "https://" + closed
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	c, err := baton.Open(context.Background(), "k8s://?kubeconfig="+path, baton.WithConnectTimeout(time.Second))
	if err == nil {
		_ = c.Close()
		t.Fatal("Open on a closed port = nil error")
	}
	if !errors.Is(err, baton.ErrUnavailable) || errors.Is(err, baton.ErrAuth) {
		t.Errorf("Open on a closed port = %v, want an error wrapping ErrUnavailable", err)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("Open on a closed port took %v, want about its 1s connect timeout", took)
	}
	t.Logf("Open: %v", err)

	rc, ns := kubeconfig(t, path)
	kc := clientOn(t, clientset(t, rc), ns, kubelock.Options{})
	m, _ := kc.Mutex(lockName(t))
	_, err = m.TryLock(opCtx(t, 5*time.Second))
	if !errors.Is(err, baton.ErrUnavailable) {
		t.Errorf("TryLock on a closed port = %v, want an error wrapping ErrUnavailable", err)
	}
	if strings.Contains(err.Error(), rc.BearerToken) && rc.BearerToken != "" {
		t.Errorf("TryLock's error shows the bearer token")
	}
}

// TestAuth checks the sentinel errors of missing rights: a user without
// update on leases is refused a grant on an existing Lease with
// baton.ErrAuth and the apiserver's words naming the verb; a user with
// exactly the documented verbs takes, renews and frees locks.
func TestAuth(t *testing.T) {
	t.Parallel()
	name := lockName(t)
	// The Lease exists (created by a grant), so the next grant is an
	// update.
	ac := newClient(t, kubelock.Options{})
	am, _ := ac.Mutex(name)
	l, err := am.Lock(opCtx(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Release(opCtx(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}

	// Open asks the apiserver whether the identity may create and update
	// Leases: without update it fails at once, on any name, rather than
	// granting a fresh name by create and losing it at the first renewal.
	_, err = baton.Open(opCtx(t, 10*time.Second), "k8s://?kubeconfig="+testenv.K8sNoUpdate(t), baton.WithTTL(testTTL))
	if !errors.Is(err, baton.ErrAuth) || errors.Is(err, baton.ErrUnavailable) {
		t.Fatalf("Open as the user without update = %v, want an error wrapping ErrAuth alone", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "update") || !strings.Contains(msg, "leases") {
		t.Errorf("Open without update = %q, want the verb and the resource named", msg)
	}
	t.Logf("Open without update: %v", err)
	// A client on the caller's own clientset makes no such check: the
	// update itself is refused, as final.
	rc, ns := kubeconfig(t, testenv.K8sNoUpdate(t))
	m, _ := clientOn(t, clientset(t, rc), ns, kubelock.Options{}).Mutex(name)
	_, err = m.Lock(opCtx(t, 10*time.Second))
	if !errors.Is(err, baton.ErrAuth) {
		t.Fatalf("Lock without update = %v, want an error wrapping ErrAuth", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "update") || !strings.Contains(msg, "leases") {
		t.Errorf("Lock without update = %q, want the verb and the resource named", msg)
	}
	t.Logf("Lock without update: %v", err)

	lc, err := baton.Open(opCtx(t, 10*time.Second), "k8s://?kubeconfig="+testenv.K8sLimited(t), baton.WithTTL(testTTL))
	if err != nil {
		t.Fatalf("Open as the limited user = %v", err)
	}
	defer func() { _ = lc.Close() }()
	lm, _ := lc.Mutex(name)
	ll, err := lm.Lock(opCtx(t, 10*time.Second))
	if err != nil {
		t.Fatalf("Lock as the limited user = %v", err)
	}
	time.Sleep(testTTL) // renewals
	if st := ll.State(); st != baton.Held {
		t.Errorf("limited user's lease after a TTL = %v, want Held", st)
	}
	if err := ll.Release(opCtx(t, 5*time.Second)); err != nil {
		t.Errorf("Release as the limited user = %v", err)
	}
}
