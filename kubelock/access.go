package kubelock

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"

	authv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/baton-go/baton"
)

// writeVerbs are the verbs a lock's holder needs beyond the reads Open's
// list proved: create makes a name's Lease, update grants, renews and
// releases.
var writeVerbs = []string{"create", "update"}

// checkAccess asks the apiserver (a SelfSubjectAccessReview, which every
// authenticated identity may make) whether this identity may create and
// update Leases in ns. Without it a missing update is found only at the
// first renewal or release, after create had already granted a fresh
// name: the holder would run, then lose its lease. A refusal wraps
// baton.ErrAuth and names the verb; an apiserver that does not answer the
// review (it is disabled, or forbidden to this identity) proves nothing,
// and the check passes.
func checkAccess(ctx context.Context, cs kubernetes.Interface, ns string) error {
	for _, verb := range writeVerbs {
		r, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authv1.SelfSubjectAccessReview{
			Spec: authv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authv1.ResourceAttributes{
				Namespace: ns, Verb: verb, Group: "coordination.k8s.io", Resource: "leases",
			}},
		}, metav1.CreateOptions{})
		switch {
		case err != nil && (apierrors.IsForbidden(err) || apierrors.IsNotFound(err) || apierrors.IsMethodNotSupported(err)):
			return nil
		case err != nil:
			return err
		case !r.Status.Allowed:
			return fmt.Errorf("%w: this identity cannot %s resource \"leases\" in API group \"coordination.k8s.io\" in the namespace %q (a lock needs get, list, watch, create and update)",
				baton.ErrAuth, verb, ns)
		}
	}
	return nil
}

// tlsRefused reports whether err is the client refusing the server's
// certificate (unknown authority, wrong name, expired), or the server
// refusing the client's: a setting to fix, not a server to wait for.
func tlsRefused(err error) bool {
	var (
		unknown  x509.UnknownAuthorityError
		hostname x509.HostnameError
		invalid  x509.CertificateInvalidError
		verify   *tls.CertificateVerificationError
		alert    tls.AlertError
	)
	return errors.As(err, &unknown) || errors.As(err, &hostname) || errors.As(err, &invalid) ||
		errors.As(err, &verify) || errors.As(err, &alert)
}
