package main_test

import (
	"strings"
	"testing"
)

// TestBadPortIsUsage: a port out of range exits 64 before anything
// connects, on every engine, not 69 after a dial that could never work.
func TestBadPortIsUsage(t *testing.T) {
	for _, url := range []string{"redis://127.0.0.1:99999", "rediss://127.0.0.1:0", "postgres://127.0.0.1:99999/db",
		"mysql://u@127.0.0.1:70000/db", "zk://127.0.0.1:99999", "redis://exa mple:6379"} {
		r := runBaton(t, nil, "run", "--backend", url, "--connect-timeout", "2s", "n", "--", "true")
		if r.code != 64 || !strings.Contains(r.stderr, "host") {
			t.Errorf("run --backend %s = exit %d, want 64 naming the host; stderr:\n%s", url, r.code, r.stderr)
		}
	}
}

// TestQueryPasswordWithAt: a ?password= value holding '@' stays the
// password: the host dialled is the URL's (127.0.0.1:1, so exit 69), no
// part of the password is printed, and the password-in-argv warning
// fires.
func TestQueryPasswordWithAt(t *testing.T) {
	url := "postgres://127.0.0.1:1/baton?sslmode=disable&password=Zq9xK@evil.invalid"
	r := runBaton(t, nil, "run", "--backend", url, "--connect-timeout", "2s", "n", "--", "true")
	if r.code != 69 {
		t.Errorf("run --backend %s = exit %d, want 69 (127.0.0.1:1 refuses); stderr:\n%s", url, r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, "--backend holds a password") {
		t.Errorf("no password-in-argv warning; stderr:\n%s", r.stderr)
	}
	for _, part := range []string{"Zq9xK", "evil"} {
		if strings.Contains(r.stderr, part) {
			t.Errorf("stderr shows %q of the password:\n%s", part, r.stderr)
		}
	}
}
