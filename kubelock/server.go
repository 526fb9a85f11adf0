package kubelock

import (
	"context"
	"net"
	"net/url"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/baton-go/baton/engine"
)

// Server returns the host:port of the apiserver a k8s:// URL reaches:
// the host:port the URL names, else its kubeconfig context's server (or
// the pod's), read as Open reads it, without connecting. A program that
// puts a proxy or a tunnel in front of the apiserver (baton drill's
// fault proxies) learns here where to point it, then opens
// k8s://PROXY?… with the same parameters.
func Server(rawURL string) (string, error) {
	u, err := engine.ParseURL(rawURL)
	if err != nil {
		return "", err
	}
	t, err := parseURL(u)
	if err != nil {
		return "", err
	}
	if t.dial != "" {
		return t.dial, nil
	}
	rc, _, err := restConfig(u, t)
	if err != nil {
		return "", err
	}
	su, err := url.Parse(rc.Host)
	if err != nil || su.Host == "" {
		su, err = url.Parse("https://" + rc.Host) // a bare host:port, as kubeconfigs allow
	}
	if err != nil {
		return "", u.Badf("server %q: %v", rc.Host, err)
	}
	port := su.Port()
	switch {
	case port != "":
	case su.Scheme == "http":
		port = "80"
	default:
		port = "443"
	}
	return net.JoinHostPort(su.Hostname(), port), nil
}

// Names returns the lock names directly under prefix that have a Lease
// in the client's namespace ("jobs" → "jobs/a", "jobs/b", not
// "jobs/a/x"), sorted: every Lease baton wrote carries its full lock
// name in an annotation. It is one list of the namespace's baton Leases,
// for a dashboard or `baton exporter PREFIX/*`, not for a hot path. It is
// reached through baton.As[*kubelock.Client].
func (c *Client) Names(ctx context.Context, prefix string) ([]string, error) {
	list, err := c.leases.List(ctx, metav1.ListOptions{LabelSelector: labelManaged + "=" + managedBy})
	if err != nil {
		return nil, c.classify("list", "*", err)
	}
	var out []string
	for _, l := range list.Items {
		rest, ok := strings.CutPrefix(l.Annotations[annName], prefix+"/")
		if ok && rest != "" && !strings.Contains(rest, "/") {
			out = append(out, prefix+"/"+rest)
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}
