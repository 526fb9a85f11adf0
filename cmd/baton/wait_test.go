package main_test

import (
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/baton-go/baton/batontest/testenv"
)

// TestShortWaitStillTries: however short --wait is (1ns, 1ms), run and
// elect make one attempt, bounded by --connect-timeout, before the wait
// can run out: a free lock or election is granted (exit 0), not reported
// busy (75) or unreachable (69) because the deadline cut the first round
// trip or the dial. A taken lock still exits 75 at once.
func TestShortWaitStillTries(t *testing.T) {
	backends := map[string]func(t *testing.T) string{
		"redis":    func(t *testing.T) string { return "redis://" + testenv.Redis(t) },
		"postgres": func(t *testing.T) string { return testenv.Postgres(t) },
	}
	for engine, backend := range backends {
		t.Run(engine, func(t *testing.T) {
			url := backend(t)
			for _, wait := range []string{"1ns", "1ms"} {
				for _, cmd := range []string{"run", "elect"} {
					r := runBaton(t, nil, cmd, "--backend", url, "--wait", wait, lockName(t), "--", "true")
					if r.code != 0 {
						t.Errorf("%s --wait %s on a free %s = exit %d, want 0; stderr:\n%s", cmd, wait, engine, r.code, r.stderr)
					}
				}
			}
			name := lockName(t)
			mark := filepath.Join(t.TempDir(), "running")
			holder := startBaton(t, nil, "run", "--backend", url, name, "--", "sh", "-c", holdScript(mark, 0))
			waitFile(t, mark, 20*time.Second)
			for _, wait := range []string{"1ns", "1ms", "200ms"} {
				if r := runBaton(t, nil, "run", "--backend", url, "--wait", wait, name, "--", "true"); r.code != 75 {
					t.Errorf("run --wait %s on a taken %s lock = exit %d, want 75; stderr:\n%s", wait, engine, r.code, r.stderr)
				}
			}
			_ = holder.cmd.Process.Signal(syscall.SIGTERM)
			holder.wait(t, 20*time.Second)
		})
	}
}
