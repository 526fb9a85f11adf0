package main_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSQLSharedSizeDisagreement: a run with --shared 1000 granted while a
// run with --shared 1 holds warns that the semaphore's sizes differ, on
// every SQL engine.
func TestSQLSharedSizeDisagreement(t *testing.T) {
	for _, e := range sqlEngines {
		t.Run(e.name, func(t *testing.T) { sharedSizeDisagreement(t, e.url(t)) })
	}
}

// sharedSizeDisagreement holds a permit of NAME with --shared 1 on url,
// then checks that a --shared 1000 run is admitted and warns, naming both
// sizes.
func sharedSizeDisagreement(t *testing.T, url string) {
	t.Helper()
	name := lockName(t)
	mark := filepath.Join(t.TempDir(), "running")
	holder := startBaton(t, nil, "run", "--backend", url, "--shared", "1", name, "--", "sh", "-c", holdScript(mark, 0))
	holder.waitFile(t, mark, 15*time.Second)
	r := runBaton(t, nil, "run", "--backend", url, "--shared", "1000", "--wait", "0", name, "--", "true")
	if r.code != 0 {
		t.Fatalf("--shared 1000 beside a --shared 1 holder: exit = %d, want 0 (its own N admits); stderr:\n%s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, "this client uses N=1000") || !strings.Contains(r.stderr, "was taken with N=1\n") {
		t.Errorf("--shared 1000 beside a --shared 1 holder: stderr = %q, want the disagreement warning naming N=1000 and N=1", r.stderr)
	}
	_ = holder.cmd.Process.Kill()
}
