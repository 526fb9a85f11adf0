package run

import (
	"bytes"
	"errors"
	"log/slog"
	"net/url"
	"strings"
	"testing"

	"github.com/baton-go/baton/cmd/baton/internal/backend"
)

// TestLogRedactor: a password of the backend URL or of the environment
// never reaches a record, in any form a driver's error may quote it in
// (as given, URL-escaped, JSON-escaped), in text or JSON; short values
// are left alone.
func TestLogRedactor(t *testing.T) {
	const urlPass, envPass = `s3cr"et/pw`, "env-pw-42"
	backendURL := "mysql://app:" + url.PathEscape(urlPass) + "@db:3306/locks"
	u, err := backend.SplitURL(backendURL)
	if err != nil || u.Password != urlPass {
		t.Fatalf("SplitURL(%q) = %+v, %v", backendURL, u, err)
	}
	env := map[string]string{"BATON_SQL_PASSWORD": envPass, "BATON_ZK_PASSWORD": "abc"}
	for _, format := range []string{"text", "json"} {
		var buf bytes.Buffer
		w := newRedactor(&buf, u.Password, func(k string) string { return env[k] })
		var h slog.Handler = slog.NewTextHandler(w, nil)
		if format == "json" {
			h = slog.NewJSONHandler(w, nil)
		}
		cause := errors.New("dial app:" + urlPass + "@db, dsn=" + url.QueryEscape(urlPass) + " env " + envPass)
		slog.New(h).Warn("connect "+envPass, "err", cause, "abc", "abc")
		out := buf.String()
		for _, secret := range []string{urlPass, url.QueryEscape(urlPass), `s3cr\"et/pw`, envPass} {
			if strings.Contains(out, secret) {
				t.Errorf("%s record shows %q:\n%s", format, secret, out)
			}
		}
		if !strings.Contains(out, "***") || !strings.Contains(out, "abc") {
			t.Errorf("%s record %q: want *** for the secrets and the short value kept", format, out)
		}
	}
}
