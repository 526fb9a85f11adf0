package backend

import (
	"net"
	"regexp"
	"strings"

	"github.com/baton-go/baton/cmd/baton/internal/cli"
	"github.com/baton-go/baton/engine"
)

// URL is a backend URL split from its credentials, so that the
// credentials are never printed: Redacted is safe to show, Orig and
// Password never are. It is engine.ParseURL's reading, the one every
// engine's Open makes too.
type URL struct{ engine.URL }

// SplitURL takes user:pass@ out of a backend URL and checks its hosts
// offline, through engine.ParseURL: the one parser every engine's Open
// uses too (a password may hold '/', '?', '#' or '@' unescaped; the user
// and password are percent-decoded once, there). Errors are usage
// errors.
func SplitURL(raw string) (URL, error) {
	if scheme, _, ok := strings.Cut(raw, "://"); !ok || scheme == "" {
		return URL{}, cli.Usagef("backend URL %q: want scheme://… (%s)", engine.Redact(raw), knownSchemes())
	}
	e, err := engine.ParseURL(raw)
	if err != nil {
		return URL{}, cli.Usagef("%v", err) // a usage error, as every bad command line is
	}
	return URL{e}, nil
}

// HasPassword reports whether a backend URL carries a password, in its
// userinfo or as a query parameter (PostgreSQL's password=).
func (u URL) HasPassword() bool {
	return u.Password != "" || secretParam.MatchString(u.Orig)
}

// knownSchemes lists the schemes of the engines linked in, for messages.
func knownSchemes() string {
	var out []string
	for _, s := range engine.Schemes() {
		out = append(out, s+"://")
	}
	return strings.Join(out, ", ")
}

// ChildBackend is the backend as COMMAND's BATON_BACKEND gets it, so that
// a nested baton run finds the backend its parent used: without a
// password, in the userinfo or as a query parameter (a user alone is no
// secret and stays). dropped reports that a password was left out:
// credentials the parent took from the environment are inherited with it,
// but one written in the URL is not handed on.
func ChildBackend(u URL) (backend string, dropped bool) {
	backend = u.Raw
	if u.HasUser && u.Password == "" {
		backend = u.Orig // the user alone
	}
	dropped = u.Password != ""
	base, query, ok := strings.Cut(backend, "?")
	if !ok {
		return backend, dropped
	}
	var keep []string
	for _, kv := range strings.Split(query, "&") {
		if secretParam.MatchString("?" + kv) {
			dropped = true
			continue
		}
		keep = append(keep, kv)
	}
	if len(keep) == 0 {
		return base, dropped
	}
	return base + "?" + strings.Join(keep, "&"), dropped
}

// secretParam matches a password given as a URL parameter (PostgreSQL
// URLs accept password= and sslpassword=).
var secretParam = regexp.MustCompile(`(?i)([?&](?:ssl)?(?:password|passwd|pass)=)[^&#]*`)

// redactQuery hides password parameters of a URL.
func redactQuery(raw string) string { return secretParam.ReplaceAllString(raw, "${1}***") }

// defaultPorts are the ports of the schemes whose URLs may omit them.
var defaultPorts = map[string]string{
	"zk": "2181", "etcd": "2379", "etcds": "2379", "redis": "6379", "rediss": "6379",
	"postgres": "5432", "postgresql": "5432", "mysql": "3306",
}

// SplitAuthority cuts a backend URL into what precedes its host list
// (scheme and userinfo), the host list, and what follows it (path and
// query). Every scheme baton knows puts a comma-separated host list
// between "://" (or the last "@" of the authority) and the path.
func SplitAuthority(raw string) (head, hosts, tail string) {
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

// Hosts returns the host:port of every server of u, in the URL's order,
// with the scheme's default port where the URL omits it.
func Hosts(u URL) []string {
	_, hosts, _ := SplitAuthority(u.Orig)
	var out []string
	for _, h := range strings.Split(hosts, ",") {
		if h == "" {
			continue
		}
		if _, _, err := net.SplitHostPort(h); err != nil {
			h = net.JoinHostPort(strings.Trim(h, "[]"), defaultPorts[u.Scheme])
		}
		out = append(out, h)
	}
	return out
}

// DialHosts is Hosts, or for a URL that names no host, the servers its
// engine finds elsewhere (a kubeconfig's apiserver): the addresses a
// drill puts its fault proxies in front of.
func DialHosts(u URL) ([]string, error) {
	if hosts := Hosts(u); len(hosts) > 0 || powers[u.Scheme].hosts == nil {
		return hosts, nil
	}
	return powers[u.Scheme].hosts(u)
}
