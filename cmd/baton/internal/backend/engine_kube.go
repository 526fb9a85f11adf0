package backend

import (
	"net"
	"net/url"
	"strings"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/baton-go/baton/cmd/baton/internal/cli"
)

// kubePower: no clean, and the apiserver's address read from the
// kubeconfig (or the pod) when the URL names none, for the drill's fault
// proxies: a k8s:// URL's host:port is only where to dial the server.
var kubePower = power{
	noClean: func(URL) error {
		return cli.Usagef("clean: not applicable to the Kubernetes engine: every holder and waiting intent on a Lease " +
			"expires by itself (a dead holder's within --ttl); run baton inspect to see holders, tokens, time left and waiters")
	},
	hosts: kubeServer,
}

// kubeServer returns the host:port of the apiserver a k8s:// URL without
// a host reaches: the server of its kubeconfig's context (read as
// kubelock reads it), or the pod's service's.
func kubeServer(u URL) ([]string, error) {
	_, query, _ := strings.Cut(u.Raw, "?")
	q, err := url.ParseQuery(query)
	if err != nil {
		return nil, cli.Usagef("backend %s: %v", u.Redacted, err)
	}
	var rc *rest.Config
	if q.Get("kubeconfig") == "" && q.Get("context") == "" {
		rc, err = rest.InClusterConfig()
	} else {
		rules := clientcmd.NewDefaultClientConfigLoadingRules()
		if path := q.Get("kubeconfig"); path != "" {
			rules = &clientcmd.ClientConfigLoadingRules{ExplicitPath: path}
		}
		over := &clientcmd.ConfigOverrides{CurrentContext: q.Get("context")}
		rc, err = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, over).ClientConfig()
	}
	if err != nil {
		return nil, cli.Usagef("backend %s: the apiserver's address: %v", u.Redacted, err)
	}
	su, err := url.Parse(rc.Host)
	if err != nil || su.Host == "" {
		su, err = url.Parse("https://" + rc.Host) // a bare host:port, as kubeconfigs allow
	}
	if err != nil {
		return nil, cli.Usagef("backend %s: server %q: %v", u.Redacted, rc.Host, err)
	}
	port := su.Port()
	if port == "" {
		port = map[string]string{"http": "80"}[su.Scheme]
		if port == "" {
			port = "443"
		}
	}
	return []string{net.JoinHostPort(su.Hostname(), port)}, nil
}
