package kubeapiserver_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/baton-go/baton/batontest/testenv"
)

const ns = "baton-test"

// client connects with the kubeconfig that env names, after checking
// what the set promises of it: readable by its owner only (it holds a
// token), TLS verified against the set's CA, namespace baton-test.
func client(t *testing.T, env string) kubernetes.Interface {
	t.Helper()
	path := testenv.Require(t, env, "Kubernetes API server")
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm()&0o077 != 0 {
		t.Errorf("%s: mode %v: a kubeconfig holding a token must be 0600", env, st.Mode().Perm())
	}
	loader := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: path}, &clientcmd.ConfigOverrides{})
	if got, _, err := loader.Namespace(); err != nil || got != ns {
		t.Errorf("%s: context namespace %q (%v), want %q", env, got, err, ns)
	}
	cfg, err := loader.ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Insecure || (len(cfg.CAData) == 0 && cfg.CAFile == "") || cfg.BearerToken == "" {
		t.Fatalf("%s: insecure=%v, CA given=%v, token given=%v: want a verified TLS connection with a token",
			env, cfg.Insecure, len(cfg.CAData) > 0 || cfg.CAFile != "", cfg.BearerToken != "")
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// TestServerSet: the kube set of scripts/servers.sh gives the Lease
// engine's tests what they rely on: an administrator who can do anything,
// a user who may hold Leases in baton-test only, and a user who may
// create but never update (renew or take over) one.
func TestServerSet(t *testing.T) {
	admin := client(t, "BATON_TEST_K8S")
	limited := client(t, "BATON_TEST_K8S_LIMITED")
	noupdate := client(t, "BATON_TEST_K8S_NOUPDATE")
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()

	name := fmt.Sprintf("kubesrv-%d", time.Now().UnixNano())
	holder, secs := "admin", int32(15)
	lease := &coordv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       coordv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &secs},
	}
	if _, err := admin.CoordinationV1().Leases(ns).Create(ctx, lease, metav1.CreateOptions{}); err != nil {
		t.Fatalf("admin: create Lease in %s: %v", ns, err)
	}
	t.Cleanup(func() {
		_ = admin.CoordinationV1().Leases(ns).Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	got, err := admin.CoordinationV1().Leases(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil || got.Spec.HolderIdentity == nil || *got.Spec.HolderIdentity != holder {
		t.Fatalf("admin: get Lease: %+v, %v; want holder %q", got, err, holder)
	}

	// baton-limited renews it in baton-test …
	l, err := limited.CoordinationV1().Leases(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("baton-limited: get Lease in %s: %v", ns, err)
	}
	taker := "baton-limited"
	l.Spec.HolderIdentity = &taker
	if l, err = limited.CoordinationV1().Leases(ns).Update(ctx, l, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("baton-limited: update Lease in %s: %v", ns, err)
	}
	if *l.Spec.HolderIdentity != taker {
		t.Errorf("baton-limited: update returned holder %q, want %q", *l.Spec.HolderIdentity, taker)
	}
	// … and may not touch Leases anywhere else.
	elsewhere := lease.DeepCopy()
	if _, err := limited.CoordinationV1().Leases("default").Create(ctx, elsewhere, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("baton-limited: create Lease in default: %v, want Forbidden", err)
	}
	if _, err := limited.CoordinationV1().Leases("default").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("baton-limited: list Leases in default: %v, want Forbidden", err)
	}

	// baton-noupdate reads it but can neither update nor patch it.
	l, err = noupdate.CoordinationV1().Leases(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("baton-noupdate: get Lease in %s: %v", ns, err)
	}
	l.Spec.HolderIdentity = &holder
	if _, err := noupdate.CoordinationV1().Leases(ns).Update(ctx, l, metav1.UpdateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("baton-noupdate: update Lease: %v, want Forbidden", err)
	}
	patch := []byte(`{"spec":{"holderIdentity":"baton-noupdate"}}`)
	if _, err := noupdate.CoordinationV1().Leases(ns).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("baton-noupdate: patch Lease: %v, want Forbidden", err)
	}
	got, err = admin.CoordinationV1().Leases(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("admin: get Lease: %v", err)
	}
	if h := got.Spec.HolderIdentity; h == nil || *h != taker {
		t.Errorf("after the refused writes the holder is %q, want %q still", deref(h), taker)
	}
}

func deref(s *string) string {
	if s == nil {
		return "<none>"
	}
	return *s
}
