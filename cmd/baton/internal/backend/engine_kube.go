package backend

import (
	"github.com/baton-go/baton/cmd/baton/internal/cli"
	"github.com/baton-go/baton/kubelock"
)

// kubePower: no clean; and the apiserver's address for
// the drill's fault proxies when the URL names none (a k8s:// URL's
// host:port is only where to dial the server).
var kubePower = power{
	noClean: func(URL) error {
		return cli.Usagef("clean: not applicable to the Kubernetes engine: every holder and waiting intent on a Lease " +
			"expires by itself (a dead holder's within --ttl); run baton inspect to see holders, tokens, time left and waiters")
	},
	hosts: func(u URL) ([]string, error) {
		addr, err := kubelock.Server(u.Raw)
		if err != nil {
			return nil, cli.Usagef("backend %s: the apiserver's address: %v", u.Redacted, err)
		}
		return []string{addr}, nil
	},
}
