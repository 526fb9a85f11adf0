package sqllock_test

import (
	"strings"
	"testing"

	"github.com/baton-go/baton/sqllock"
)

// TestWarning: the SQL engines' transport warning (engine.Driver.Warn)
// names a host off this machine whose link is plain or unverified, in
// the driver's own terms, and never the password.
func TestWarning(t *testing.T) {
	const pw = "Secr3t-pw"
	for _, tt := range []struct {
		url, env, want string
	}{
		{"postgres://u:" + pw + "@192.0.2.1:5432/x", "", "no sslmode, so prefer"},
		{"postgres://u:" + pw + "@192.0.2.1:5432/x", "allow", "PGSSLMODE=allow"},
		{"postgres://u:" + pw + "@192.0.2.1:5432/x?sslmode=require", "", "TLS without checking the server's name"},
		{"postgres://u:" + pw + "@192.0.2.1:5432/x?sslmode=verify-full", "", ""},
		{"postgres://u:" + pw + "@127.0.0.1:5432/x", "", ""},
		{"postgres://u:" + pw + "@localhost,192.0.2.9:5432/x", "", "host 192.0.2.9"},
		{"mysql://u:" + pw + "@192.0.2.1:3306/x", "", "tls=false"},
		{"mysql://u:" + pw + "@192.0.2.1:3306/x?tls=skip-verify", "", "certificate is not checked"},
		{"mysql://u:" + pw + "@192.0.2.1:3306/x?tls=true", "", ""},
		{"mysql://u:" + pw + "@[::1]:3306/x", "", ""},
		{"sqlite:///tmp/x.db", "", ""},
	} {
		getenv := func(k string) string {
			if k == "PGSSLMODE" {
				return tt.env
			}
			return ""
		}
		got := sqllock.Warning(tt.url, getenv)
		if tt.want == "" && got != "" || !strings.Contains(got, tt.want) {
			t.Errorf("Warning(%s, PGSSLMODE=%q) = %q, want %q", tt.url, tt.env, got, tt.want)
		}
		if strings.Contains(got, pw) {
			t.Errorf("Warning(%s) shows the password: %q", tt.url, got)
		}
	}
}
