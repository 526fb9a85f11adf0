package main_test

import (
	"bufio"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// get sends a GET of base+path with Host host ("" for the URL's) and the
// bearer token tok ("" for none), and returns the status and the body.
func get(t *testing.T, c *http.Client, base, path, host, tok string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET %s (Host %q): %v", path, host, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, resp.Header, string(b)
}

// noRedirect is a client that shows redirects instead of following them.
var noRedirect = &http.Client{Timeout: 10 * time.Second,
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// openStream opens /events and reads its first event; the stream stays
// open until the test ends.
func openStream(t *testing.T, base string) {
	t.Helper()
	resp, err := http.Get(base + "/events")
	if err != nil {
		t.Fatalf("GET /events: %v", err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if resp.StatusCode != http.StatusOK || err != nil || !strings.HasPrefix(line, "data: {") {
		t.Fatalf("GET /events: %s, first line %q, %v; want 200 and a data line", resp.Status, line, err)
	}
}

// TestExporterStreamCap: with --max-streams 3, three event streams are
// served, the fourth gets 503 with a Retry-After, and /metrics and
// /api/locks still answer while the three stay open.
func TestExporterStreamCap(t *testing.T) {
	_, url := redisLocks(t)
	base, _, _ := startExporter(t, url, "--max-streams", "3", lockName(t))
	for range 3 {
		openStream(t, base)
	}
	code, h, _ := get(t, noRedirect, base, "/events", "", "") // a stream served would end at its timeout
	if code != http.StatusServiceUnavailable || h.Get("Retry-After") == "" {
		t.Errorf("GET /events beyond --max-streams: %d, Retry-After %q; want 503 with a Retry-After", code, h.Get("Retry-After"))
	}
	for _, path := range []string{"/metrics", "/api/locks"} {
		if code, _, _ := get(t, http.DefaultClient, base, path, "", ""); code != http.StatusOK {
			t.Errorf("GET %s with every stream taken: %d, want 200", path, code)
		}
	}
	if r := runBaton(t, nil, "exporter", "--backend", url, "--max-streams", "0", "x"); r.code != 64 {
		t.Errorf("--max-streams 0: exit %d, want 64:\n%s", r.code, r.stderr)
	}
}

// TestExporterHostCheck: a request whose Host is a name of another site
// (DNS rebinding: the attacker's name pointed at 127.0.0.1) gets 421 and
// no lock; localhost, loopback addresses and --allow-host names answer.
func TestExporterHostCheck(t *testing.T) {
	_, url := redisLocks(t)
	name := lockName(t)
	base, _, _ := startExporter(t, url, "--allow-host", "Locks.Example.", name)
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(base, "http://"))
	for host, want := range map[string]int{
		"attacker.example":           421,
		"attacker.example:" + port:   421,
		"localhost.attacker.example": 421,
		"10.1.2.3:" + port:           421,
		"localhost:" + port:          200,
		"127.0.0.1:" + port:          200,
		"[::1]:" + port:              200,
		"locks.example:" + port:      200,
		"LOCKS.EXAMPLE":              200,
	} {
		for _, path := range []string{"/api/locks", "/metrics", "/events", "/"} {
			if path == "/events" && want == 200 {
				continue // a stream does not end: the cap test reads it
			}
			code, _, body := get(t, noRedirect, base, path, host, "")
			if code != want || want != 200 && strings.Contains(body, name) {
				t.Errorf("GET %s with Host %q: %d, want %d (body shows the lock: %v)", path, host, code, want, strings.Contains(body, name))
			}
		}
	}
}

// writeToken writes tok to a file of mode perm and returns its path.
func writeToken(t *testing.T, tok string, perm os.FileMode) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(path, []byte(tok+"\n"), perm); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, perm); err != nil { // whatever the umask
		t.Fatal(err)
	}
	return path
}

const testToken = "0123456789abcdef-exporter-test-token"

// TestExporterToken: with --token-file every endpoint answers 401 without
// the token or with a wrong one (the page sends a browser to the login),
// 200 with it as a bearer token or as the session cookie POST /login
// sets; the login page itself holds no data and is served to anyone.
func TestExporterToken(t *testing.T) {
	_, url := redisLocks(t)
	name := lockName(t)
	base, _, w := startExporter(t, url, "--token-file", writeToken(t, testToken, 0o600), name)
	for _, path := range []string{"/metrics", "/api/locks", "/events", "/app.js", "/index.html"} {
		for _, tok := range []string{"", "wrong-" + testToken, testToken[:len(testToken)-1]} {
			if code, _, body := get(t, noRedirect, base, path, "", tok); code != 401 || strings.Contains(body, name) {
				t.Errorf("GET %s with token %q: %d, want 401 and no lock", path, tok, code)
			}
		}
	}
	if code, h, _ := get(t, noRedirect, base, "/", "", ""); code != http.StatusSeeOther || h.Get("Location") != "login" {
		t.Errorf("GET / without the token: %d to %q, want 303 to login", code, h.Get("Location"))
	}
	if code, _, body := get(t, noRedirect, base, "/login", "", ""); code != 200 || !strings.Contains(body, "login.js") {
		t.Errorf("GET /login without the token: %d, want 200 and the login page", code)
	}
	for _, path := range []string{"/metrics", "/api/locks", "/"} {
		if code, _, body := get(t, noRedirect, base, path, "", testToken); code != 200 || path == "/api/locks" && !strings.Contains(body, name) {
			t.Errorf("GET %s with the token: %d, want 200 (and the lock)", path, code)
		}
	}
	cookie := login(t, http.DefaultClient, base, testToken)
	if cookie.Secure {
		t.Errorf("session cookie over plain HTTP is Secure: the browser would not send it back")
	}
	req, _ := http.NewRequest(http.MethodGet, base+"/api/locks", nil)
	req.AddCookie(cookie)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("GET /api/locks with the session cookie: %s, want 200", resp.Status)
	}
	if strings.Contains(w.String(), testToken) || strings.Contains(cookie.Value, testToken) {
		t.Errorf("the token shows on stderr or in the cookie")
	}
}

// login posts tok to /login, wants 204 with an HttpOnly SameSite=Strict
// session cookie, and returns it; a wrong token gets 401 and no cookie.
func login(t *testing.T, c *http.Client, base, tok string) *http.Cookie {
	t.Helper()
	post := func(tok string) *http.Response {
		req, _ := http.NewRequest(http.MethodPost, base+"/login", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("POST /login: %v", err)
		}
		resp.Body.Close()
		return resp
	}
	if resp := post("wrong-" + tok); resp.StatusCode != 401 || len(resp.Cookies()) != 0 {
		t.Errorf("POST /login with a wrong token: %s, %d cookies; want 401, none", resp.Status, len(resp.Cookies()))
	}
	resp := post(tok)
	if resp.StatusCode != http.StatusNoContent || len(resp.Cookies()) != 1 {
		t.Fatalf("POST /login: %s, %d cookies; want 204 and the session cookie", resp.Status, len(resp.Cookies()))
	}
	ck := resp.Cookies()[0]
	if !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode {
		t.Errorf("session cookie HttpOnly %v, SameSite %v; want HttpOnly, Strict", ck.HttpOnly, ck.SameSite)
	}
	return ck
}

// TestExporterTokenFileRefused: a token file every user can read, a
// short token, a missing file exit 64 before anything connects, and the
// token is never printed.
func TestExporterTokenFileRefused(t *testing.T) {
	for _, tc := range []struct{ name, path string }{
		{"world-readable", writeToken(t, testToken, 0o644)},
		{"short", writeToken(t, "0123456789", 0o600)},
		{"missing", filepath.Join(t.TempDir(), "none")},
	} {
		// A closed port: connecting first would exit 69.
		r := runBaton(t, nil, "exporter", "--backend", "redis://127.0.0.1:1", "--token-file", tc.path, "x")
		if r.code != 64 || !strings.Contains(r.stderr, "--token-file") || strings.Contains(r.stderr, testToken) {
			t.Errorf("%s token file: exit %d, want 64 naming --token-file without the token:\n%s", tc.name, r.code, r.stderr)
		}
	}
}

// TestExporterTLS: with --tls-cert, --tls-key and --token-file the
// exporter serves HTTPS that a client trusting the certificate reads with
// the token, sets a Secure session cookie, and answers plain HTTP with
// no data; a key pair that does not match, or half of one, exits 64.
func TestExporterTLS(t *testing.T) {
	_, url := redisLocks(t)
	name := lockName(t)
	tc := selfSigned(t, t.TempDir())
	certFile, keyFile := tc.cert, tc.key
	base, _, _ := startExporter(t, url, "--tls-cert", certFile, "--tls-key", keyFile,
		"--token-file", writeToken(t, testToken, 0o600), name)
	if !strings.HasPrefix(base, "https://") {
		t.Fatalf("the exporter announces %s, want https://", base)
	}
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: tc.pool}}}
	if code, _, body := get(t, c, base, "/api/locks", "", testToken); code != 200 || !strings.Contains(body, name) {
		t.Errorf("GET /api/locks over TLS with the token: %d, want 200 and the lock", code)
	}
	if code, _, _ := get(t, c, base, "/metrics", "", ""); code != 401 {
		t.Errorf("GET /metrics over TLS without the token: %d, want 401", code)
	}
	if ck := login(t, c, base, testToken); !ck.Secure {
		t.Errorf("the session cookie over TLS is not Secure")
	}
	plain := "http://" + strings.TrimPrefix(base, "https://")
	if code, _, body := get(t, http.DefaultClient, plain, "/api/locks", "", testToken); code == 200 || strings.Contains(body, name) {
		t.Errorf("GET /api/locks over plain HTTP to the TLS port: %d, want an error and no lock", code)
	}
	otherCert := selfSigned(t, t.TempDir()).cert
	for _, args := range [][]string{
		{"--tls-cert", otherCert, "--tls-key", keyFile},
		{"--tls-cert", certFile},
		{"--tls-key", keyFile},
	} {
		r := runBaton(t, nil, append([]string{"exporter", "--backend", "redis://127.0.0.1:1", "x"}, args...)...)
		if r.code != 64 {
			t.Errorf("exporter %q: exit %d, want 64:\n%s", args, r.code, r.stderr)
		}
	}
}

// TestExporterHelp: baton help exporter says what the exporter exposes
// and each way it is protected.
func TestExporterHelp(t *testing.T) {
	r := runBaton(t, nil, "help", "exporter")
	for _, want := range []string{"What it exposes", "lock", "owner", "program name", "fencing tokens", "every change as an event",
		"loopback by default", "Host check", "DNS rebinding", "--allow-host", "--token-file", "chmod 600",
		"--tls-cert", "--tls-key", "--max-streams", "Default 64", "timeouts"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("baton help exporter does not say %q:\n%s", want, r.stdout)
		}
	}
}
