package main_test

import (
	"strings"
	"testing"
	"time"
)

// TestRedisURLParameters: a redis:// or rediss:// URL takes db= and no
// other parameter. skip_verify, which go-redis reads as "do not verify the
// server's certificate", is refused with 64 before anything connects (so
// no password goes to a host that was never verified), and so is any
// other parameter, named in the message.
func TestRedisURLParameters(t *testing.T) {
	for _, tc := range []struct{ url, names string }{
		{"rediss://:Pw9x@10.255.255.1:6379?skip_verify=true", "skip_verify"},
		{"rediss://127.0.0.1:1/0?skip_verify=false", "skip_verify"},
		{"redis://127.0.0.1:1?dial_timeout=1s", `"dial_timeout"`},
		{"redis://127.0.0.1:1?db=0&max_retries=5", `"max_retries"`},
	} {
		r := runBaton(t, nil, "run", "--backend", tc.url, "--connect-timeout", "5s", "n", "--", "true")
		if r.code != 64 || !strings.Contains(r.stderr, tc.names) || r.took > 4*time.Second {
			t.Errorf("run --backend %s = exit %d after %v, want 64 at once naming %s; stderr:\n%s", tc.url, r.code, r.took, tc.names, r.stderr)
		}
		if strings.Contains(r.stderr, "Pw9x") {
			t.Errorf("stderr shows the password:\n%s", r.stderr)
		}
	}
	r := runBaton(t, nil, "run", "--backend", "redis://127.0.0.1:1?db=0", "--connect-timeout", "300ms", "n", "--", "true")
	if r.code != 69 {
		t.Errorf("run --backend redis://127.0.0.1:1?db=0 = exit %d, want 69 (db= is accepted); stderr:\n%s", r.code, r.stderr)
	}
}
