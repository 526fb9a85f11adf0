package engine

import (
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"github.com/baton-go/baton"
)

// URL is a backend URL split from its credentials, so that the
// credentials are never printed: Redacted is safe to show, Orig and
// Password never are.
type URL struct {
	Scheme string // lower case
	// Orig is the URL with its credentials, the userinfo re-escaped so
	// that every driver's URL parser reads it back as User and Password
	// decode to: never print it.
	Orig     string
	Raw      string // without credentials
	User     string // percent-decoded
	Password string // percent-decoded
	HasUser  bool
	Redacted string
	// TLSName, when set, is the name TLS verifies the servers'
	// certificates against instead of the hosts dialled (a client that
	// dials through a proxy on 127.0.0.1).
	TLSName string
}

// BadURL is the error of a URL no engine could use. It wraps
// baton.ErrInvalidOption; its message is the caller's alone, so that a
// CLI prints it as it is.
type BadURL struct{ Msg string }

func (e *BadURL) Error() string        { return e.Msg }
func (e *BadURL) Is(target error) bool { return target == baton.ErrInvalidOption }

// Badf returns a *BadURL for u, prefixed with "backend <redacted>: ".
func (u URL) Badf(format string, args ...any) error {
	return &BadURL{Msg: "backend " + u.Redacted + ": " + fmt.Sprintf(format, args...)}
}

// badf returns a *BadURL with the message format gives.
func badf(format string, args ...any) error {
	return &BadURL{Msg: fmt.Sprintf(format, args...)}
}

// ParseURL takes user:pass@ out of a backend URL and checks its hosts
// offline. net/url cannot parse the multi-host form (h1:2181,h2:2181), and
// a password may hold '/', '?', '#' or '@' unescaped, so the userinfo is
// cut by hand (userinfoEnd), unless the URL has an empty authority
// (sqlite:///path). The user and password are percent-decoded here, once,
// for every engine; a '%' not followed by two hex digits is taken
// literally. Whether a host must be given at all, and how many, is left
// to the engine.
func ParseURL(raw string) (URL, error) {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok || scheme == "" {
		return URL{}, &BadURL{Msg: "backend URL " + strconv.Quote(Redact(raw)) + ": want scheme://…"}
	}
	u := URL{Scheme: strings.ToLower(scheme), Orig: raw, Raw: raw, Redacted: redactQuery(raw)}
	if at := userinfoEnd(rest); at >= 0 {
		info, hosts := rest[:at], rest[at+1:]
		user, pass, hasPass := strings.Cut(info, ":")
		u.User, u.Password, u.HasUser = unescapeInfo(user), unescapeInfo(pass), true
		ui := url.User(u.User)
		if hasPass {
			ui = url.UserPassword(u.User, u.Password)
		}
		u.Orig = scheme + "://" + ui.String() + "@" + hosts
		u.Raw = scheme + "://" + hosts
		u.Redacted = redactQuery(scheme + "://" + url.User(u.User).String() + ":***@" + hosts)
	}
	return u, checkHosts(u)
}

// Rest returns the URL after "scheme://", without credentials.
func (u URL) Rest() string {
	_, rest, _ := strings.Cut(u.Raw, "://")
	return rest
}

// Hosts returns the URL's comma-separated host list and what follows it
// ("/path?query"), without credentials.
func (u URL) Hosts() (hosts, tail string) {
	rest := u.Rest()
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		return rest[:i], rest[i:]
	}
	return rest, ""
}

// checkHosts refuses, offline and for every scheme alike, a host list
// that no engine could dial: a host that is not a name or an address, a
// port outside 1–65535.
func checkHosts(u URL) error {
	hosts, _ := u.Hosts()
	if strings.HasPrefix(u.Rest(), "/") {
		return nil // empty authority: sqlite:///path
	}
	for _, h := range strings.Split(hosts, ",") {
		host, port, hasPort, ok := hostShape(h)
		if !ok {
			return u.Badf("host %q: want name:port or [IPv6]:port", h)
		}
		if n, err := strconv.Atoi(port); hasPort && (err != nil || n < 1 || n > 65535) {
			return u.Badf("host %q: port %q, want 1 to 65535", host, port)
		}
	}
	return nil
}

// userinfoEnd returns the index of the '@' that ends the userinfo of
// rest (a URL after "://"), or -1 when it has none. A password may hold
// '/', '?', '#' and '@' unescaped, and a query value may hold '@'
// (?password=p@ss), so the '@' is found by what must follow it: the URL
// has no userinfo if it reads as hosts[/path][?query] as it is, else the
// userinfo ends at the first '@' after which it does (plausibleRest). An
// '@' in the path must be written %40, and so must a password's '@' that
// is followed by a '?' or '#'.
func userinfoEnd(rest string) int {
	if strings.HasPrefix(rest, "/") || !strings.Contains(rest, "@") {
		return -1 // empty authority: sqlite:///path/with@sign.db
	}
	if plausibleRest(rest) {
		return -1
	}
	for i := 0; i < len(rest); i++ {
		if rest[i] == '@' && plausibleRest(rest[i+1:]) {
			return i
		}
	}
	// Nothing reads as a URL: hide everything up to the last '@', and let
	// checkHosts refuse what follows it.
	return strings.LastIndexByte(rest, '@')
}

// plausibleRest reports whether s reads as hosts[/path][?query][#frag] of
// a backend URL: a host list of hostShape, no '@' in the path or the
// fragment, and every '@' of the query inside a key=value parameter's
// value.
func plausibleRest(s string) bool {
	s, frag, _ := strings.Cut(s, "#")
	hostsPath, query, _ := strings.Cut(s, "?")
	if strings.Contains(hostsPath, "@") || strings.Contains(frag, "@") {
		return false
	}
	hosts, _, _ := strings.Cut(hostsPath, "/")
	for _, h := range strings.Split(hosts, ",") {
		if _, _, _, ok := hostShape(h); !ok {
			return false
		}
	}
	for _, kv := range strings.Split(query, "&") {
		if k, _, ok := strings.Cut(kv, "="); strings.Contains(kv, "@") && (!ok || !paramKey(k)) {
			return false
		}
	}
	return true
}

// hostShape splits one host of a URL's host list into host and port
// (hasPort when a ':' follows the host, port then possibly empty) and
// reports whether it has the shape of one: a name or IPv4 address of
// unreserved characters and escapes (a PostgreSQL socket directory is
// written %2Fvar%2Frun), or an IPv6 address in brackets, then digits
// after the ':'. An empty entry is left to the engine; the port's range
// is checkHosts'.
func hostShape(h string) (host, port string, hasPort, ok bool) {
	host, tail := h, ""
	if strings.HasPrefix(h, "[") {
		end := strings.IndexByte(h, ']')
		if end < 0 {
			return h, "", false, false
		}
		host, tail = h[1:end], h[end+1:]
		addr, zone, _ := strings.Cut(host, "%")
		if !strings.Contains(addr, ":") || strings.Trim(addr, "0123456789abcdefABCDEF:.") != "" || !unreserved(zone) {
			return host, "", false, false
		}
	} else {
		if i := strings.IndexByte(h, ':'); i >= 0 {
			host, tail = h[:i], h[i:]
		}
		if !unreserved(host) {
			return host, "", false, false
		}
	}
	if tail == "" {
		return host, "", false, true
	}
	port = tail[1:]
	return host, port, true, tail[0] == ':' && strings.Trim(port, "0123456789") == ""
}

// unreserved reports whether s holds only URL-unreserved characters and
// '%' (escapes).
func unreserved(s string) bool {
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("-._~%", c)) {
			return false
		}
	}
	return true
}

// paramKey reports whether k is a plausible URL parameter name.
func paramKey(k string) bool {
	return k != "" && strings.Trim(k, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.") == ""
}

// unescapeInfo percent-decodes a user or password. Unlike
// url.PathUnescape it never fails: a '%' that starts no escape is kept.
func unescapeInfo(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
			b.WriteByte(unhex(s[i+1])<<4 | unhex(s[i+2]))
			i += 2
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	}
	return c - 'a' + 10
}

// Redact hides what may be credentials in a backend URL, or in a
// backend that is not a URL at all ("user:pass@host"): everything up to
// its last '@', and password parameters.
func Redact(raw string) string {
	if i := strings.LastIndexByte(raw, '@'); i >= 0 {
		return "***" + raw[i:]
	}
	return redactQuery(raw)
}

// secretParam matches a password given as a URL parameter (PostgreSQL
// URLs accept password= and sslpassword=).
var secretParam = regexp.MustCompile(`(?i)([?&](?:ssl)?(?:password|passwd|pass)=)[^&#]*`)

// redactQuery hides password parameters of a URL.
func redactQuery(raw string) string { return secretParam.ReplaceAllString(raw, "${1}***") }
