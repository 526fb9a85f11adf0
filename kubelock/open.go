package kubelock

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/engine"
)

func init() { engine.Register(engine.Driver{Open: open, Check: check, Lists: true}, "k8s") }

// protobuf is the apiserver's protobuf encoding.
const protobuf = runtime.ContentTypeProtobuf

// namespaceFile is where a pod's service account names its namespace.
const namespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// target is a k8s:// URL read: where the configuration comes from, and
// the address to dial instead of the configuration's server, if any.
type target struct {
	kubeconfig, context, namespace string
	dial                           string // host:port
}

// parseURL reads
// k8s://[HOST:PORT][?kubeconfig=PATH][&context=NAME][&namespace=NS]: at
// most one host, with its port; no path, no credentials, each parameter
// at most once.
func parseURL(u engine.URL) (target, error) {
	hosts, tail := u.Hosts()
	path, query, _ := strings.Cut(tail, "?")
	switch {
	case u.HasUser:
		return target{}, u.Badf("a k8s:// URL takes no credentials: they come from the kubeconfig or the pod's service account")
	case strings.Contains(hosts, ","):
		return target{}, u.Badf("a k8s:// URL names at most one host: the address to dial instead of the kubeconfig's server")
	case path != "" && path != "/":
		return target{}, u.Badf("a k8s:// URL has no path (k8s://?namespace=NS)")
	}
	if hosts != "" {
		if _, port, err := net.SplitHostPort(hosts); err != nil || port == "" {
			return target{}, u.Badf("host %q: want host:port, the address to dial instead of the kubeconfig's server", hosts)
		}
	}
	q, err := url.ParseQuery(query)
	if err != nil {
		return target{}, u.Badf("%v", err)
	}
	t := target{dial: hosts}
	for _, k := range slices.Sorted(maps.Keys(q)) {
		vs := q[k]
		if len(vs) != 1 || vs[0] == "" {
			return target{}, u.Badf("parameter %s: want one non-empty value", k)
		}
		switch v := vs[0]; k {
		case "kubeconfig":
			t.kubeconfig = v
		case "context":
			t.context = v
		case "namespace":
			if errs := validation.IsDNS1123Label(v); len(errs) > 0 {
				return target{}, u.Badf("namespace %q: %s", v, strings.Join(errs, "; "))
			}
			t.namespace = v
		default:
			return target{}, u.Badf("unknown parameter %q: want kubeconfig=, context= or namespace=", k)
		}
	}
	return t, nil
}

// check checks a k8s:// URL and the options offline.
func check(cfg engine.Config) error {
	if _, err := parseURL(cfg.URL); err != nil {
		return err
	}
	_, err := options(cfg).validate()
	return err
}

// options are the engine's Options from baton.Open's.
func options(cfg engine.Config) Options {
	return Options{TTL: cfg.TTL, TokenFloor: cfg.TokenFloor, Observer: cfg.Observer, Process: cfg.Process}
}

// open serves baton.Open for k8s:// URLs: k8s:// alone is the pod's own
// service account (rest.InClusterConfig) in the pod's namespace;
// kubeconfig= and context= read a kubeconfig as kubectl does (context=
// alone: the default kubeconfig, $KUBECONFIG or ~/.kube/config), in the
// context's namespace ("default" when it names none); namespace=
// overrides either; a host:port in the URL is dialled instead of the
// server (redirect). A list of the namespace's Leases proves the
// connection and the credentials; it is retried until ctx ends, unless
// the server refuses them (baton.ErrAuth). Then checkAccess asks whether
// the identity may create and update Leases, so that a missing verb
// fails Open, not the first renewal.
func open(ctx context.Context, cfg engine.Config) (engine.Conn, error) {
	t, err := parseURL(cfg.URL)
	if err != nil {
		return nil, err
	}
	rc, ns, err := restConfig(cfg.URL, t)
	if err != nil {
		return nil, err
	}
	rc = rest.CopyConfig(rc)
	if err := redirect(rc, t.dial); err != nil {
		return nil, cfg.URL.Badf("%v", err)
	}
	rc.UserAgent = "baton"
	// baton paces its own requests; client-go's default limiter (5/s,
	// bursts of 10) would starve the keeper's renewals.
	rc.QPS, rc.Burst = -1, 0
	// Every watcher of a name decodes every write of its Lease: protobuf
	// costs a fraction of JSON there.
	rc.ContentType = protobuf
	rc.AcceptContentTypes = protobuf + "," + runtime.ContentTypeJSON
	if cfg.URL.TLSName != "" {
		rc.TLSClientConfig.ServerName = cfg.URL.TLSName
	}
	// Not rc.Timeout: it bounds a whole response, and a watch is one.
	rc.Dial = (&net.Dialer{Timeout: cfg.ConnectTimeout, KeepAlive: 30 * time.Second}).DialContext
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, cfg.URL.Badf("%v", engine.Scrub(err, rc.BearerToken))
	}
	c, err := newClient(cs, ns, options(cfg))
	if err != nil {
		return nil, err
	}
	c.secrets = []string{rc.BearerToken, rc.Password}
	if err := c.ping(ctx); err != nil {
		_ = c.close()
		return nil, fmt.Errorf("kubelock: connect %s: %w", cfg.URL.Redacted, err)
	}
	if err := checkAccess(ctx, cs, ns); err != nil {
		_ = c.close()
		if !errors.Is(err, baton.ErrAuth) {
			err = c.classify("review", "*", err)
		}
		return nil, fmt.Errorf("kubelock: connect %s: %w", cfg.URL.Redacted, err)
	}
	return connOf(c), nil
}

// restConfig builds the client configuration and namespace of t.
func restConfig(u engine.URL, t target) (*rest.Config, string, error) {
	if t.kubeconfig == "" && t.context == "" {
		rc, err := rest.InClusterConfig()
		if err != nil {
			return nil, "", u.Badf("not in a pod (%v): give kubeconfig=PATH", err)
		}
		ns := t.namespace
		if ns == "" {
			b, err := os.ReadFile(namespaceFile)
			if err != nil {
				return nil, "", u.Badf("the pod's namespace: %v (give namespace=)", err)
			}
			ns = strings.TrimSpace(string(b))
		}
		return rc, ns, nil
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if t.kubeconfig != "" {
		rules = &clientcmd.ClientConfigLoadingRules{ExplicitPath: t.kubeconfig}
	}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules,
		&clientcmd.ConfigOverrides{CurrentContext: t.context, Context: clientcmdContext(t.namespace)})
	rc, err := cc.ClientConfig()
	if err != nil {
		return nil, "", u.Badf("kubeconfig: %v", err)
	}
	ns, _, err := cc.Namespace()
	if err != nil {
		return nil, "", u.Badf("kubeconfig: %v", err)
	}
	return rc, ns, nil
}

// ping lists at most one of the namespace's Leases until it works, the
// server refuses the credentials, or ctx ends (engine.Retry); the error
// wraps baton.ErrAuth or baton.ErrUnavailable.
func (c *Client) ping(ctx context.Context) error {
	err := engine.Retry(ctx, func() error {
		_, err := c.leases.List(ctx, metav1.ListOptions{Limit: 1, LabelSelector: labelManaged + "=" + managedBy})
		if err != nil {
			return c.classify("list", "*", err)
		}
		return nil
	})
	if err != nil && !errors.Is(err, baton.ErrAuth) && !errors.Is(err, baton.ErrUnavailable) && !errors.Is(err, baton.ErrInvalidOption) {
		err = fmt.Errorf("%w: %w", baton.ErrUnavailable, err)
	}
	return err
}

// redirect points rc at dial (host:port) instead of its server, keeping
// the server's scheme and path, while TLS still verifies the server by
// the name (or address) the configuration gives it: the way through a
// proxy or a tunnel to the same apiserver. rc as it is when dial is "".
func redirect(rc *rest.Config, dial string) error {
	if dial == "" {
		return nil
	}
	su, err := url.Parse(rc.Host)
	if err != nil || su.Host == "" {
		su, err = url.Parse("https://" + rc.Host) // a bare host:port, as kubeconfigs allow
	}
	if err != nil {
		return fmt.Errorf("server %q: %v", rc.Host, err)
	}
	if rc.TLSClientConfig.ServerName == "" {
		rc.TLSClientConfig.ServerName = su.Hostname()
	}
	su.Host = dial
	rc.Host = su.String()
	return nil
}

// clientcmdContext overrides the context's namespace when ns is set.
func clientcmdContext(ns string) clientcmdapi.Context { return clientcmdapi.Context{Namespace: ns} }
