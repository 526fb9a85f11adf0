// Command setup prepares the private Kubernetes API server that
// scripts/servers.d/kube.sh starts, as its administrator: the namespace
// the tests use and the RBAC rules of the two restricted test users.
//
//	setup -kubeconfig ADMIN_KUBECONFIG [-wait DURATION]
//
// First it waits up to -wait (default 2m) for the server's /readyz to
// answer ok: the server's port opens before its storage and built-in RBAC
// rules are ready, and a freshly started one takes seconds to get there.
// It is idempotent: a reused server (servers.sh start on a running set)
// runs it again, and every object is created or brought back to what it
// says here. It exits 1 with the API server's error on failure.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// Namespace is where the tests keep their Leases; the restricted users
// may touch Leases there and nowhere else.
const Namespace = "baton-test"

// leaseVerbs are what a lock holder does with a Lease: the engine reads,
// watches, creates, renews (update) and releases (delete) it.
var leaseVerbs = []string{"get", "list", "watch", "create", "update", "delete"}

// grants names, for each restricted user, the verbs it gets on Leases in
// Namespace. baton-noupdate can neither update nor patch: it can take a
// free Lease but never renew or take over one, the refusal the engine's
// authorization tests need.
var grants = []struct {
	user  string
	verbs []string
}{
	{"baton-limited", leaseVerbs},
	{"baton-noupdate", []string{"get", "list", "watch", "create", "delete"}},
}

func main() {
	kubeconfig := flag.String("kubeconfig", "", "the administrator's kubeconfig")
	wait := flag.Duration("wait", 2*time.Minute, "how long to wait for the server to get ready")
	flag.Parse()
	if *kubeconfig == "" || flag.NArg() > 0 || *wait <= 0 {
		fmt.Fprintln(os.Stderr, "usage: setup -kubeconfig ADMIN_KUBECONFIG [-wait DURATION]")
		os.Exit(64)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *wait+time.Minute)
	defer cancel()
	if err := run(ctx, *kubeconfig, *wait); err != nil {
		fmt.Fprintln(os.Stderr, "setup:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, kubeconfig string, wait time.Duration) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	if err := waitReady(ctx, cs, wait); err != nil {
		return err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Namespace}}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("namespace %s: %w", Namespace, err)
	}
	for _, g := range grants {
		if err := grant(ctx, cs, g.user, g.verbs); err != nil {
			return err
		}
	}
	return nil
}

// waitReady polls /readyz until it answers ok or wait has passed, when it
// returns the last answer.
func waitReady(ctx context.Context, cs kubernetes.Interface, wait time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		body, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not ready after %v: %v %s", wait, err, body)
		case <-tick.C:
		}
	}
}

// grant gives user verbs on Leases in Namespace: a Role and a RoleBinding
// both named after the user.
func grant(ctx context.Context, cs kubernetes.Interface, user string, verbs []string) error {
	meta := metav1.ObjectMeta{Name: user + "-leases", Namespace: Namespace}
	role := &rbacv1.Role{ObjectMeta: meta, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{"coordination.k8s.io"},
		Resources: []string{"leases"},
		Verbs:     verbs,
	}}}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: meta,
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: meta.Name},
	}
	roles, bindings := cs.RbacV1().Roles(Namespace), cs.RbacV1().RoleBindings(Namespace)
	if _, err := roles.Create(ctx, role, metav1.CreateOptions{}); apierrors.IsAlreadyExists(err) {
		_, err = roles.Update(ctx, role, metav1.UpdateOptions{})
		if err != nil {
			return fmt.Errorf("role %s: %w", meta.Name, err)
		}
	} else if err != nil {
		return fmt.Errorf("role %s: %w", meta.Name, err)
	}
	// A RoleBinding's roleRef cannot change; its subjects can.
	if _, err := bindings.Create(ctx, binding, metav1.CreateOptions{}); apierrors.IsAlreadyExists(err) {
		_, err = bindings.Update(ctx, binding, metav1.UpdateOptions{})
		if err != nil {
			return fmt.Errorf("rolebinding %s: %w", meta.Name, err)
		}
	} else if err != nil {
		return fmt.Errorf("rolebinding %s: %w", meta.Name, err)
	}
	return nil
}
