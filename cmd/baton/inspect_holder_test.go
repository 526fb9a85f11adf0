package main_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/baton-go/baton/batontest/testenv"
)

// holderEngines are a backend of every engine family, for the tests of
// what inspect shows of a holder.
var holderEngines = []struct {
	name string
	url  func(t *testing.T) string
}{
	{"zk", zkURL},
	{"etcd", etcdURL},
	{"redis", func(t *testing.T) string { return "redis://" + testenv.Redis(t) }},
	{"redlock", redlockURL},
	{"postgres", func(t *testing.T) string { return testenv.Postgres(t) }},
	{"mysql", mysqlURL},
	{"sqlite", func(t *testing.T) string { return "sqlite://" + filepath.Join(t.TempDir(), "locks.db") }},
}

// jobScript writes an executable script called name that marks it runs
// (its first argument is the mark) and holds until SIGTERM, on which it
// exits 0; it returns its path.
func jobScript(t *testing.T, name string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	script := "#!/bin/sh\ntrap 'exit 0' TERM\ntouch \"$1\"\nwhile :; do sleep 0.05; done\n"
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestInspectHolderProcess: on every engine family, inspect of a lock
// held by `baton run` shows who holds it — this host, the pid of the
// holding baton, COMMAND's name — in its JSON and its table, and never
// COMMAND's arguments nor its environment.
func TestInspectHolderProcess(t *testing.T) {
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	const (
		secretArg = "--password=arg-s3cr3t-9f2c"
		secretEnv = "env-s3cr3t-7d1a"
	)
	for _, e := range holderEngines {
		t.Run(e.name, func(t *testing.T) {
			t.Parallel()
			url, name := e.url(t), lockName(t)
			job := jobScript(t, "nightly-report")
			mark := filepath.Join(t.TempDir(), "holding")
			h := startBaton(t, []string{"JOB_TOKEN=" + secretEnv}, "run", "--backend", url, "--ttl", "3", name, "--", job, mark, secretArg)
			h.waitFile(t, mark, 15*time.Second)

			d, r := inspectJSON(t, nil, url, name)
			if len(d.Holders) != 1 {
				t.Fatalf("inspect --json = %s, want one holder", r.stdout)
			}
			got := d.Holders[0]
			if got.Host != host || got.PID != h.cmd.Process.Pid || got.Program != "nightly-report" {
				t.Errorf("inspect --json holder = host %q, pid %d, program %q; want %q, %d (the holding baton), nightly-report",
					got.Host, got.PID, got.Program, host, h.cmd.Process.Pid)
			}
			r = runBaton(t, nil, "inspect", "--backend", url, name)
			if r.code != 0 {
				t.Fatalf("inspect exit = %d; stderr:\n%s", r.code, r.stderr)
			}
			for _, want := range []string{"HOST", "PID", "PROGRAM", host, strconv.Itoa(h.cmd.Process.Pid), "nightly-report"} {
				if !strings.Contains(r.stdout, want) {
					t.Errorf("inspect table lacks %q:\n%s", want, r.stdout)
				}
			}
			d, r2 := inspectJSON(t, nil, url, name)
			for _, out := range []string{r.stdout, r2.stdout, strings.Join(d.Notes, "\n")} {
				if strings.Contains(out, "s3cr3t") {
					t.Errorf("inspect shows COMMAND's arguments or environment:\n%s", out)
				}
			}
			stopHolder(t, h)
		})
	}
}
