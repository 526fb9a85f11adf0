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

// defaultPorts are the ports of the schemes whose URLs may omit them.
var defaultPorts = map[string]string{
	"zk": "2181", "etcd": "2379", "etcds": "2379", "redis": "6379", "rediss": "6379",
	"postgres": "5432", "postgresql": "5432", "mysql": "3306",
}

// splitAuthority cuts a backend URL into what precedes its host list
// (scheme and userinfo), the host list, and what follows it (path and
// query). Every scheme baton knows puts a comma-separated host list
// between "://" (or the last "@" of the authority) and the path.
func splitAuthority(raw string) (head, hosts, tail string) {
	scheme, rest, _ := strings.Cut(raw, "://")
	head = scheme + "://"
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	authority := rest[:end]
	tail = rest[end:]
	if i := strings.LastIndexByte(authority, '@'); i >= 0 {
		head += authority[:i+1]
		authority = authority[i+1:]
	}
	return head, authority, tail
}

// urlHosts returns the host:port of every server of u, in the URL's
// order, with the scheme's default port where the URL omits it.
func urlHosts(u engineURL) []string {
	_, hosts, _ := splitAuthority(u.orig)
	var out []string
	for _, h := range strings.Split(hosts, ",") {
		if h == "" {
			continue
		}
		if _, _, err := net.SplitHostPort(h); err != nil {
			h = net.JoinHostPort(strings.Trim(h, "[]"), defaultPorts[u.scheme])
		}
		out = append(out, h)
	}
	return out
}
