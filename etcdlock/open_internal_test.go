package etcdlock

import (
	"errors"
	"slices"
	"testing"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/engine"
)

// TestEndpoints: the URL forms the CLI has always taken, read as
// clientv3's endpoints, and the ones it refuses, each with the CLI's
// message.
func TestEndpoints(t *testing.T) {
	for _, tc := range []struct {
		url, fail string
		eps       []string
	}{
		{url: "etcd://h1:2379,h2:2379", eps: []string{"h1:2379", "h2:2379"}},
		{url: "etcds://h1:2379", eps: []string{"h1:2379"}},
		{url: "etcd://localhost", eps: []string{"localhost:2379"}},
		{url: "etcd://127.0.0.1:23790/", eps: []string{"127.0.0.1:23790"}},
		{url: "etcd://[::1]:2379,[::1]", eps: []string{"[::1]:2379", "[::1]:2379"}},
		{url: "etcd://user:s3cr%2Ft@h1:2379", eps: []string{"h1:2379"}},
		{url: "etcd://", fail: "backend etcd://: no endpoint"},
		{url: "etcd://h1:2379,", fail: "backend etcd://h1:2379,: empty endpoint"},
		{url: "etcd://h1:0", fail: `backend etcd://h1:0: host "h1": port "0", want 1 to 65535`},
		{url: "etcd://h1:port", fail: `backend etcd://h1:port: host "h1:port": want name:port or [IPv6]:port`},
		{url: "etcd://:2379", fail: `backend etcd://:2379: endpoint ":2379" has no host`},
		{url: "etcd://h1:2379/prefix", fail: "backend etcd://h1:2379/prefix: a path is not supported (lock names are keys from the root)"},
		{url: "etcd://h1:2379?x=1", fail: "backend etcd://h1:2379?x=1: query and fragment are not supported"},
		{url: "etcd://u:pw@h1:2379/p", fail: "backend etcd://u:***@h1:2379/p: a path is not supported (lock names are keys from the root)"},
		{url: "etcd://::1", fail: `backend etcd://::1: host "::1": want name:port or [IPv6]:port`},
	} {
		u, err := engine.ParseURL(tc.url)
		var eps []string
		if err == nil {
			eps, err = endpoints(u)
		}
		if tc.fail != "" {
			if !errors.Is(err, baton.ErrInvalidOption) || err.Error() != tc.fail {
				t.Errorf("endpoints(%q) = %q, %v; want %q wrapping %v", tc.url, eps, err, tc.fail, baton.ErrInvalidOption)
			}
			continue
		}
		if err != nil || !slices.Equal(eps, tc.eps) {
			t.Errorf("endpoints(%q) = %q, %v; want %q", tc.url, eps, err, tc.eps)
		}
	}
}
