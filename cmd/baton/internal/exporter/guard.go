package exporter

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
)

// hostGuard refuses requests whose Host header names a host the exporter
// does not answer to. A page of another site whose name an attacker
// points at 127.0.0.1 (DNS rebinding) reaches a loopback exporter with
// the attacker's name as Host: without this check, it could read the
// locks through the victim's browser.
type hostGuard struct {
	names    []string // host names and IP addresses, lower case
	loopback bool     // every loopback address and localhost
	anyIP    bool     // every IP address: bound to every interface
}

// newHostGuard allows the hosts of the address listened on (listen as
// given, bound as the listener reports it) and the --allow-host names.
// An IP address as Host is never a rebinding: bound to every interface,
// every IP address is allowed, and the machine's host name.
func newHostGuard(listen string, bound net.Addr, allow []string) hostGuard {
	g := hostGuard{names: slices.Clone(allow)}
	host, _, _ := net.SplitHostPort(listen)
	ip := net.ParseIP(host)
	switch {
	case host == "" || ip != nil && ip.IsUnspecified():
		g.anyIP, g.loopback = true, true
		if name, err := os.Hostname(); err == nil {
			g.names = append(g.names, strings.ToLower(name))
		}
	case strings.EqualFold(host, "localhost") || ip != nil && ip.IsLoopback():
		g.loopback = true
	case ip != nil:
		g.names = append(g.names, ip.String())
	default:
		g.names = append(g.names, strings.ToLower(host))
	}
	if a, ok := bound.(*net.TCPAddr); ok {
		g.loopback = g.loopback || a.IP.IsLoopback()
		g.names = append(g.names, a.IP.String())
	}
	return g
}

// allows reports whether the Host header hostport names this exporter.
func (g hostGuard) allows(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.ToLower(strings.TrimSuffix(strings.Trim(host, "[]"), "."))
	if host == "" {
		return false
	}
	if ip := net.ParseIP(host); ip != nil {
		return g.anyIP || g.loopback && ip.IsLoopback() || slices.Contains(g.names, ip.String())
	}
	return g.loopback && host == "localhost" || slices.Contains(g.names, host)
}

func (g hostGuard) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !g.allows(r.Host) {
			http.Error(w, "baton exporter: this host name is not one the exporter answers to (see --allow-host)",
				http.StatusMisdirectedRequest)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// sessionCookie carries the page's session once /login took the token.
const sessionCookie = "baton_session"

// tokenGuard requires the --token-file token on every request: as a
// bearer token (Prometheus, curl), or as the session cookie /login sets
// for the page, whose EventSource cannot send a header. The cookie is a
// MAC of the token, not the token: the browser never stores the token.
type tokenGuard struct {
	tokenSum   [32]byte // SHA-256 of the token: compared in constant time, whatever its length
	sessionSum [32]byte
	session    string
}

func newTokenGuard(token string) *tokenGuard {
	m := hmac.New(sha256.New, []byte(token))
	m.Write([]byte("baton exporter page session"))
	session := hex.EncodeToString(m.Sum(nil))
	return &tokenGuard{tokenSum: sha256.Sum256([]byte(token)), sessionSum: sha256.Sum256([]byte(session)), session: session}
}

// bearer reports whether r carries the token in an Authorization header.
func (g *tokenGuard) bearer(r *http.Request) bool {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	sum := sha256.Sum256([]byte(tok))
	return ok && subtle.ConstantTimeCompare(sum[:], g.tokenSum[:]) == 1
}

// allows reports whether r carries the token or the session cookie.
func (g *tokenGuard) allows(r *http.Request) bool {
	if g.bearer(r) {
		return true
	}
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return false
	}
	sum := sha256.Sum256([]byte(c.Value))
	return subtle.ConstantTimeCompare(sum[:], g.sessionSum[:]) == 1
}

// loginFiles are what the login page needs; they hold no lock data and
// are served without the token.
var loginFiles = []string{"/login", "/login.js", "/style.css", "/favicon.svg"}

// wrap answers 401 to a request without the token, but serves the login
// page, and sends a browser asking for the page to it.
func (g *tokenGuard) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case g.allows(r) || r.Method == http.MethodGet && slices.Contains(loginFiles, r.URL.Path):
			h.ServeHTTP(w, r)
		case r.Method == http.MethodGet && r.URL.Path == "/":
			// Relative, unlike http.Redirect's: right behind a proxy
			// that serves the exporter under a path of its own.
			w.Header().Set("Location", "login")
			w.WriteHeader(http.StatusSeeOther)
		default:
			w.Header().Set("WWW-Authenticate", `Bearer realm="baton exporter"`)
			http.Error(w, "baton exporter: the token of --token-file is required", http.StatusUnauthorized)
		}
	})
}

// login is POST /login: given the token as a bearer token, it sets the
// session cookie, HttpOnly (no script reads it), SameSite=Strict (no
// other site's page sends it) and Secure over TLS.
func (g *tokenGuard) login(w http.ResponseWriter, r *http.Request) {
	if !g.bearer(r) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="baton exporter"`)
		http.Error(w, "baton exporter: wrong token", http.StatusUnauthorized)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: g.session, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusNoContent)
}

// streamLimit serves h to at most n requests at once and answers 503,
// with a Retry-After, beyond: the event streams stay open as long as
// their pages do.
func streamLimit(n int, h http.HandlerFunc) http.HandlerFunc {
	slots := make(chan struct{}, n)
	return func(w http.ResponseWriter, r *http.Request) {
		select {
		case slots <- struct{}{}:
			defer func() { <-slots }()
			h(w, r)
		default:
			w.Header().Set("Retry-After", strconv.Itoa(int(eventsKeepAlive.Seconds())))
			http.Error(w, "baton exporter: too many open event streams (--max-streams)", http.StatusServiceUnavailable)
		}
	}
}
