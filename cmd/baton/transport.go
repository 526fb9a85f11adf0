package main

import (
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
)

// warnTransport warns, once per process and before connecting, about a
// ZooKeeper, etcd, Redis or Redlock backend off this host that is reached
// without TLS while credentials are given (they cross the network
// readable), and about ZooKeeper without digest auth off this host (baton's
// entries then carry the open ACL: any client of the ensemble may delete
// them, and with them someone's lock). The SQL engines warn in their own
// terms (sslmode, tls=). Loopback servers are left alone: a development
// server on this host is not what the warnings are about.
func warnTransport(u engineURL) {
	var plain, creds bool
	switch u.scheme {
	case "zk":
		plain, creds = true, u.hasUser || os.Getenv("BATON_ZK_USER") != ""
	case "etcd":
		plain, creds = true, u.hasUser || os.Getenv("BATON_ETCD_USER") != ""
	case "redis":
		plain, creds = true, u.hasPassword() || os.Getenv("BATON_REDIS_PASSWORD") != ""
	case "redlock":
		plain, creds = !queryTLS(u.raw), u.hasPassword() || os.Getenv("BATON_REDIS_PASSWORD") != ""
	case "zk+tls":
		creds = u.hasUser || os.Getenv("BATON_ZK_USER") != ""
	default:
		return
	}
	var remote string
	for _, h := range urlHosts(u) {
		if host, _, err := net.SplitHostPort(h); err == nil && !isLoopback(host) {
			remote = host
			break
		}
	}
	if remote == "" {
		return
	}
	transportWarned.Do(func() {
		if plain && creds {
			note("warning: %s host %s without TLS: the credentials and the locks cross the network unencrypted; use %s",
				u.scheme, remote, tlsSchemeOf(u.scheme))
		}
		if strings.HasPrefix(u.scheme, "zk") && !creds {
			note("warning: ZooKeeper host %s without digest auth: baton's entries carry the open ACL (world:anyone), "+
				"so any client of the ensemble can delete them; give %s", remote, passwordHint("zk"))
		}
	})
}

var transportWarned sync.Once

// queryTLS reports whether a URL's query sets tls=true.
func queryTLS(raw string) bool {
	_, query, _ := strings.Cut(raw, "?")
	q, err := url.ParseQuery(query)
	if err != nil {
		return false
	}
	on, _ := strconv.ParseBool(q.Get("tls"))
	return on
}

// tlsSchemeOf names the TLS form of a plain-text scheme, for messages.
func tlsSchemeOf(scheme string) string {
	switch scheme {
	case "zk":
		return "zk+tls://"
	case "etcd":
		return "etcds://"
	case "redis":
		return "rediss://"
	}
	return "?tls=true"
}
