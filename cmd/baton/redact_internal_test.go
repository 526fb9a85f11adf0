package main

import (
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	"github.com/baton-go/baton/cmd/baton/internal/cli"
	batonengine "github.com/baton-go/baton/engine"
)

// redactCases are passwords as typed in a URL's userinfo, unescaped
// characters included, and what the engine must be given.
var redactCases = []struct{ typed, want string }{
	{"S3/cr#t?xq", "S3/cr#t?xq"},
	{"Zq%zzW@k/9", "Zq%zzW@k/9"},   // a '%' that starts no escape, an '@'
	{"Pw%2Fenc%40X", "Pw/enc@X"},   // escaped: decoded once
	{"Co:lon/Pw#1", "Co:lon/Pw#1"}, // the first ':' ends the user
	{"Tw%2541ce", "Tw%41ce"},       // decoded once, not twice
	{"Sp ace+Pl%20", "Sp ace+Pl "}, // '+' stays a plus in a userinfo
}

// redactSchemes are the engines' URLs around a userinfo.
var redactSchemes = []string{
	"zk://%s@127.0.0.1:2181/chroot",
	"etcd://%s@127.0.0.1:2379",
	"redis://%s@127.0.0.1:6379/0",
	"redlock://%s@127.0.0.1:1,127.0.0.1:2,127.0.0.1:3",
	"postgres://%s@127.0.0.1:5432/db?sslmode=disable",
	"mysql://%s@127.0.0.1:3306/db?tls=false",
}

// TestRedactSplitURL: whatever a password holds, splitURL hands every
// engine the decoded password (zk and etcd read it from engineURL; the
// drivers parse the re-escaped URL), and neither the redacted nor the
// credential-free URL shows any of it.
func TestRedactSplitURL(t *testing.T) {
	for _, pc := range redactCases {
		for _, f := range redactSchemes {
			raw := strings.Replace(f, "%s", "al%2Fice:"+pc.typed, 1)
			u, err := splitURL(raw)
			if err != nil {
				t.Fatalf("splitURL(%q) = %v", raw, err)
			}
			if u.user != "al/ice" || u.password != pc.want || !u.hasUser {
				t.Errorf("splitURL(%q): user %q password %q, want al/ice and %q", raw, u.user, u.password, pc.want)
			}
			for _, shown := range []string{u.redacted, u.raw} {
				for _, frag := range []string{pc.typed, pc.want, pc.typed[:4], url.PathEscape(pc.want)} {
					if strings.Contains(shown, frag) {
						t.Errorf("splitURL(%q): %q shows %q", raw, shown, frag)
					}
				}
			}
			if !strings.Contains(u.redacted, "***@127.0.0.1") {
				t.Errorf("splitURL(%q).redacted = %q, want the hosts after ***@", raw, u.redacted)
			}
			if err := parseBackend(raw); err != nil {
				t.Errorf("parseBackend(%q) = %v", raw, err)
			}
			if got := driverPassword(t, u); got != pc.want {
				t.Errorf("%s driver reads password %q from %q, want %q", u.scheme, got, raw, pc.want)
			}
		}
	}
}

// driverPassword is the password the engine's client is given for u.
func driverPassword(t *testing.T, u engineURL) string {
	t.Helper()
	switch u.scheme {
	case "zk", "etcd":
		return u.password
	case "redis":
		o, err := redis.ParseURL(u.orig)
		if err != nil {
			t.Fatalf("redis.ParseURL: %v", err)
		}
		return o.Password
	case "redlock": // what package redlock reads, through baton.Open
		eu, err := batonengine.ParseURL(u.orig)
		if err != nil {
			t.Fatalf("batonengine.ParseURL: %v", err)
		}
		return eu.Password
	case "postgres":
		cc, err := pgx.ParseConfig(u.orig)
		if err != nil {
			t.Fatalf("pgx.ParseConfig: %v", err)
		}
		return cc.Password
	case "mysql": // what parseMySQL reads
		pu, err := url.Parse(u.orig)
		if err != nil {
			t.Fatalf("url.Parse: %v", err)
		}
		p, _ := pu.User.Password()
		return p
	}
	t.Fatalf("no driver for %s", u.scheme)
	return ""
}

// TestRedactSplitURLForms: an empty authority keeps an '@' of its path,
// and a backend that is not a URL never shows what precedes its '@'.
func TestRedactSplitURLForms(t *testing.T) {
	u, err := splitURL("sqlite:///tmp/a@b/locks.db")
	if err != nil || u.hasUser || u.raw != "sqlite:///tmp/a@b/locks.db" {
		t.Errorf("splitURL(sqlite:///tmp/a@b/locks.db) = %+v, %v; want the path kept, no user", u, err)
	}
	_, err = splitURL("bob:Hunter2x/y@127.0.0.1:2379")
	if err == nil || strings.Contains(err.Error(), "Hunter2x") {
		t.Errorf("splitURL without a scheme = %v, want a usage error without the password", err)
	}
}

// TestSafeChildBackend: COMMAND's BATON_BACKEND is the parent's backend
// without its password, wherever the URL held it.
func TestSafeChildBackend(t *testing.T) {
	tests := []struct {
		in, want string
		dropped  bool
	}{
		{"etcd://127.0.0.1:2379", "etcd://127.0.0.1:2379", false},
		{"zk://bob@h:2181/c", "zk://bob@h:2181/c", false},
		{"zk://bob:S3/cr#t@h:2181/c", "zk://h:2181/c", true},
		{"postgres://h/db?sslmode=verify-full&password=Secr3t&x=1", "postgres://h/db?sslmode=verify-full&x=1", true},
		{"postgres://h/db?password=Secr3t", "postgres://h/db", true},
		{"postgres://h/db?sslpassword=Secr3t&sslmode=require", "postgres://h/db?sslmode=require", true},
		{"sqlite:///var/a@b/locks.db", "sqlite:///var/a@b/locks.db", false},
	}
	for _, tt := range tests {
		got, dropped := childBackend(tt.in)
		if got != tt.want || dropped != tt.dropped {
			t.Errorf("childBackend(%q) = %q, %v; want %q, %v", tt.in, got, dropped, tt.want, tt.dropped)
		}
	}
}

// TestSafeTermSafe: every character a terminal acts on comes out escaped,
// everything else as it was.
func TestSafeTermSafe(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain-owner_42 ü 名前", "plain-owner_42 ü 名前"},
		{"\x1b[2J\x1b]0;pwned\x07", `\x1b[2J\x1b]0;pwned\x07`},
		{"a\rb\nc\td\x00e\x7f", `a\x0db\x0ac\x09d\x00e\x7f`},
		{"c1:\u0085\u009b", `c1:\u0085\u009b`},
		{"bidi:\u202eevil\u202c\u2066x\u2069\u200f\u061c", `bidi:\u202eevil\u202c\u2066x\u2069\u200f\u061c`},
		{"sep\u2028\u2029", `sep\u2028\u2029`},
		{"bad\xff\xfe", `bad\xff\xfe`},
		{`back\x1bslash`, `back\\x1bslash`},
	}
	for _, tt := range tests {
		if got := cli.TermSafe(tt.in); got != tt.want {
			t.Errorf("cli.TermSafe(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
