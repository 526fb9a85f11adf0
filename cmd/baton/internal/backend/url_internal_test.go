package backend

import (
	"errors"
	"strings"
	"testing"

	"github.com/baton-go/baton/cmd/baton/internal/cli"
)

// TestCheckHostsEveryScheme: a port out of range, a port that is not a
// number, or a host no engine could dial is a usage error of the one
// offline check, whatever the scheme; well-formed host lists pass it.
func TestCheckHostsEveryScheme(t *testing.T) {
	schemes := map[string]string{ // scheme → what follows the host list
		"zk": "/chroot", "zk+tls": "", "etcd": "", "etcds": "", "redis": "/0", "rediss": "",
		"redlock": "", "postgres": "/db", "postgresql": "/db", "mysql": "/db",
	}
	for scheme, tail := range schemes {
		for _, bad := range []string{"127.0.0.1:99999", "127.0.0.1:0", "127.0.0.1:", "127.0.0.1:http", "exa mple:1", "::1:2379", "[::1:2379"} {
			hosts := bad
			if scheme == "redlock" {
				hosts = "127.0.0.1:1,127.0.0.1:2," + bad
			}
			raw := scheme + "://" + hosts + tail
			var ue *cli.UsageError
			if err := parseBackend(raw); !errors.As(err, &ue) {
				t.Errorf("parseBackend(%q) = %v, want a usage error", raw, err)
			}
		}
	}
	for _, good := range []string{
		"etcd://[::1]:2379", "etcd://[fe80::1%25eth0]:2379", "redis://localhost:6379/0", "zk://h1:2181,h2,h3:2181/c",
		"postgres://%2Fvar%2Frun%2Fpostgresql/db", "postgres:///db?host=/tmp", "mysql://u@db.example.com/db",
		"redlock://h-1:1,h_2:2,h.3:3", "sqlite:///tmp/x.db",
	} {
		if err := parseBackend(good); err != nil {
			t.Errorf("parseBackend(%q) = %v, want nil", good, err)
		}
	}
}

// TestSplitURLQueryPassword: an '@' in a query value (PostgreSQL's
// password=) does not end a userinfo, with or without one before it; a
// password's own '@' still does not either.
func TestSplitURLQueryPassword(t *testing.T) {
	for _, tc := range []struct{ raw, user, password, hosts string }{
		{"postgres://127.0.0.1:1/db?sslmode=disable&password=Zq9x@evil.invalid", "", "", "127.0.0.1:1"},
		{"postgres://app@127.0.0.1:1/db?password=Zq9x@evil.invalid", "app", "", "127.0.0.1:1"},
		{"postgres://app:p@ss@127.0.0.1:1/db?password=Zq9x@evil.invalid", "app", "p@ss", "127.0.0.1:1"},
		{"redis://:Zq9x@evil@127.0.0.1:6379/0", "", "Zq9x@evil", "127.0.0.1:6379"},
		{"etcd://u:12/x@127.0.0.1:2379", "u", "12/x", "127.0.0.1:2379"},
		{"etcd://u:99?x@127.0.0.1:2379", "u", "99?x", "127.0.0.1:2379"},
	} {
		u, err := SplitURL(tc.raw)
		if err != nil {
			t.Fatalf("SplitURL(%q) = %v", tc.raw, err)
		}
		_, hosts, _ := SplitAuthority(u.Raw)
		if u.User != tc.user || u.Password != tc.password || hosts != tc.hosts {
			t.Errorf("SplitURL(%q): user %q, password %q, hosts %q; want %q, %q, %q", tc.raw, u.User, u.Password, hosts, tc.user, tc.password, tc.hosts)
		}
		if !u.HasPassword() {
			t.Errorf("SplitURL(%q).hasPassword() = false", tc.raw)
		}
		for _, secret := range []string{"Zq9x", "evil", "ss@", "12/x", "99?x"} {
			if strings.Contains(u.Redacted, secret) {
				t.Errorf("SplitURL(%q).redacted = %q shows %q", tc.raw, u.Redacted, secret)
			}
		}
	}
}
