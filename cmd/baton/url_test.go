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
