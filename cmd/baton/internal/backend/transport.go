package backend

import (
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/baton-go/baton/cmd/baton/internal/cli"
	"github.com/baton-go/baton/engine"
)

// warnTransport shows the engine's own transport warning (engine.Warning:
// the SQL engines warn in their terms, sslmode and tls=), and warns, once
// per Env and before connecting, about a
// ZooKeeper, etcd, Redis or Redlock backend off this host that is reached
// without TLS while credentials are given (they cross the network
// readable), and about ZooKeeper without digest auth off this host (baton's
// entries then carry the open ACL: any client of the ensemble may delete
// them, and with them someone's lock). Loopback servers are left alone: a development
// server on this host is not what the warnings are about.
func warnTransport(env *cli.Env, u URL) {
	if w := engine.Warning(u.Orig, env.Getenv); w != "" {
		env.NoteOnce("transport", "%s", w)
		return
	}
	var plain, creds bool
	switch u.Scheme {
	case "zk":
		plain, creds = true, u.HasUser || env.Getenv("BATON_ZK_USER") != ""
	case "etcd":
		plain, creds = true, u.HasUser || env.Getenv("BATON_ETCD_USER") != ""
	case "redis":
		plain, creds = true, u.HasPassword() || env.Getenv("BATON_REDIS_PASSWORD") != ""
	case "redlock":
		plain, creds = !queryTLS(u.Raw), u.HasPassword() || env.Getenv("BATON_REDIS_PASSWORD") != ""
	case "zk+tls":
		creds = u.HasUser || env.Getenv("BATON_ZK_USER") != ""
	default:
		return
	}
	var remote string
	for _, h := range Hosts(u) {
		if host, _, err := net.SplitHostPort(h); err == nil && !engine.Loopback(host) {
			remote = host
			break
		}
	}
	if remote == "" {
		return
	}
	if plain && creds {
		env.NoteOnce("transport", "warning: %s host %s without TLS: the credentials and the locks cross the network unencrypted; use %s",
			u.Scheme, remote, tlsSchemeOf(u.Scheme))
	}
	if strings.HasPrefix(u.Scheme, "zk") && !creds {
		env.NoteOnce("transport", "warning: ZooKeeper host %s without digest auth: baton's entries carry the open ACL (world:anyone), "+
			"so any client of the ensemble can delete them; give %s", remote, PasswordHint("zk"))
	}
}

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

// tlsTwin is the TLS scheme of each plain-text scheme that has one.
var tlsTwin = map[string]string{"zk": "zk+tls", "etcd": "etcds", "redis": "rediss"}

// tlsSchemeOf names the TLS form of a plain-text scheme, for messages.
func tlsSchemeOf(scheme string) string {
	if twin := tlsTwin[scheme]; twin != "" {
		return twin + "://"
	}
	return "?tls=true"
}
