package backend

import (
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

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

// TestRedactSplitURL: whatever a password holds, SplitURL hands every
// engine the decoded password (zk and etcd read it from URL; the
// drivers parse the re-escaped URL), and neither the redacted nor the
// credential-free URL shows any of it.
func TestRedactSplitURL(t *testing.T) {
	for _, pc := range redactCases {
		for _, f := range redactSchemes {
			raw := strings.Replace(f, "%s", "al%2Fice:"+pc.typed, 1)
			u, err := SplitURL(raw)
			if err != nil {
				t.Fatalf("SplitURL(%q) = %v", raw, err)
			}
			if u.User != "al/ice" || u.Password != pc.want || !u.HasUser {
				t.Errorf("SplitURL(%q): user %q password %q, want al/ice and %q", raw, u.User, u.Password, pc.want)
			}
			for _, shown := range []string{u.Redacted, u.Raw} {
				for _, frag := range []string{pc.typed, pc.want, pc.typed[:4], url.PathEscape(pc.want)} {
					if strings.Contains(shown, frag) {
						t.Errorf("SplitURL(%q): %q shows %q", raw, shown, frag)
					}
				}
			}
			if !strings.Contains(u.Redacted, "***@127.0.0.1") {
				t.Errorf("SplitURL(%q).redacted = %q, want the hosts after ***@", raw, u.Redacted)
			}
			if err := parseBackend(raw); err != nil {
				t.Errorf("parseBackend(%q) = %v", raw, err)
			}
			if got := driverPassword(t, u); got != pc.want {
				t.Errorf("%s driver reads password %q from %q, want %q", u.Scheme, got, raw, pc.want)
			}
		}
	}
}

// driverPassword is the password the engine's client is given for u.
func driverPassword(t *testing.T, u URL) string {
	t.Helper()
	switch u.Scheme {
	case "zk", "etcd":
		return u.Password
	case "redis":
		o, err := redis.ParseURL(u.Orig)
		if err != nil {
			t.Fatalf("redis.ParseURL: %v", err)
		}
		return o.Password
	case "redlock": // what package redlock reads, through baton.Open
		eu, err := batonengine.ParseURL(u.Orig)
		if err != nil {
			t.Fatalf("batonengine.ParseURL: %v", err)
		}
		return eu.Password
	case "postgres":
		cc, err := pgx.ParseConfig(u.Orig)
		if err != nil {
			t.Fatalf("pgx.ParseConfig: %v", err)
		}
		return cc.Password
	case "mysql": // what parseMySQL reads
		pu, err := url.Parse(u.Orig)
		if err != nil {
			t.Fatalf("url.Parse: %v", err)
		}
		p, _ := pu.User.Password()
		return p
	}
	t.Fatalf("no driver for %s", u.Scheme)
	return ""
}

// TestRedactSplitURLForms: an empty authority keeps an '@' of its path,
// and a backend that is not a URL never shows what precedes its '@'.
func TestRedactSplitURLForms(t *testing.T) {
	u, err := SplitURL("sqlite:///tmp/a@b/locks.db")
	if err != nil || u.HasUser || u.Raw != "sqlite:///tmp/a@b/locks.db" {
		t.Errorf("SplitURL(sqlite:///tmp/a@b/locks.db) = %+v, %v; want the path kept, no user", u, err)
	}
	_, err = SplitURL("bob:Hunter2x/y@127.0.0.1:2379")
	if err == nil || strings.Contains(err.Error(), "Hunter2x") {
		t.Errorf("SplitURL without a scheme = %v, want a usage error without the password", err)
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
		u, err := SplitURL(tt.in)
		if err != nil {
			t.Fatalf("SplitURL(%q) = %v", tt.in, err)
		}
		got, dropped := ChildBackend(u)
		if got != tt.want || dropped != tt.dropped {
			t.Errorf("ChildBackend(%q) = %q, %v; want %q, %v", tt.in, got, dropped, tt.want, tt.dropped)
		}
	}
}

// parseBackend checks raw as a command checks its --backend.
func parseBackend(raw string) error {
	var cfg Config
	cfg.SetBackend(raw)
	return Check(&cfg)
}
