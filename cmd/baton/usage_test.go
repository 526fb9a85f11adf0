package main_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// subcommands are the commands with a help of their own.
var subcommands = []string{"run", "elect", "inspect", "clean", "exporter", "demo", "drill"}

// TestHelpOnStdout: help that was asked for (baton help, baton help X,
// baton X --help or -h) goes to stdout with exit 0 and nothing on
// stderr, so that `baton help run | less` works; help printed because of
// a usage error goes to stderr with exit 64.
func TestHelpOnStdout(t *testing.T) {
	asked := [][]string{{"help"}, {"--help"}, {"-h"},
		// run, elect, inspect and clean take --help after other flags too.
		{"run", "--backend", "etcd://127.0.0.1:1", "--help"}, {"elect", "n", "-h"},
		{"inspect", "--json", "--help"}, {"clean", "--apply", "-h"}}
	for _, c := range subcommands {
		asked = append(asked, []string{"help", c}, []string{c, "--help"}, []string{c, "-h"})
	}
	for _, args := range asked {
		r := runBaton(t, nil, args...)
		if r.code != 0 || !strings.Contains(r.stdout, "Usage") || r.stderr != "" {
			t.Errorf("baton %q = exit %d, stdout %d bytes, stderr %q; want 0, the help, nothing", args, r.code, len(r.stdout), r.stderr)
		}
	}
	for _, args := range [][]string{nil, {"frobnicate"}, {"help", "frobnicate"}} {
		r := runBaton(t, nil, args...)
		if r.code != 64 || r.stdout != "" || !strings.Contains(r.stderr, "Usage") {
			t.Errorf("baton %q = exit %d, stdout %q, stderr:\n%s\nwant 64, nothing, the help on stderr", args, r.code, r.stdout, r.stderr)
		}
	}
}

// TestUsageErrorNamesItsHelp: each subcommand's usage error points at
// that subcommand's help, not at run's.
func TestUsageErrorNamesItsHelp(t *testing.T) {
	env := []string{"BATON_BACKEND=etcd://127.0.0.1:1"}
	for _, args := range [][]string{
		{"run", "--bogus"}, {"elect", "n"}, {"inspect"}, {"clean", "a", "b"},
		{"exporter", "--bogus"}, {"demo", "extra"}, {"drill", "--bogus"},
	} {
		r := runBaton(t, env, args...)
		want := "'baton help " + args[0] + "'"
		if r.code != 64 || !strings.Contains(r.stderr, want) {
			t.Errorf("baton %q = exit %d, stderr:\n%s\nwant 64 and %s", args, r.code, r.stderr, want)
		}
	}
}

// TestUsageErrorJSON: with --log-format json every line on stderr is a
// JSON record, a usage error found while parsing the command line too
// (before or after the flag that asks for JSON).
func TestUsageErrorJSON(t *testing.T) {
	for _, args := range [][]string{
		{"run", "--log-format", "json", "--bogus", "n", "--", "true"},
		{"run", "--wait", "soon", "--log-format=json", "n", "--", "true"},
		{"elect", "--log-format", "json", "n"},
		{"run", "--log-format", "json", "--backend", "etcd://127.0.0.1:1", "a/../b", "--", "true"},
	} {
		r := runBaton(t, nil, args...)
		if r.code != 64 {
			t.Errorf("baton %q exit = %d, want 64; stderr:\n%s", args, r.code, r.stderr)
		}
		lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
		for _, line := range lines {
			var rec struct {
				Level string
				Msg   string
				Exit  int
				Help  string
			}
			if err := json.Unmarshal([]byte(line), &rec); err != nil {
				t.Errorf("baton %q: stderr line %q is not JSON: %v", args, line, err)
				continue
			}
			if rec.Level != "ERROR" || rec.Exit != 64 || rec.Msg == "" || rec.Help != "baton help "+args[0] {
				t.Errorf("baton %q: record %s; want level ERROR, a message, exit 64, help \"baton help %s\"", args, line, args[0])
			}
		}
	}
}

// TestLongInputClipped: a 10 KB lock name (or flag) is quoted cut to its
// first bytes and its length in the error, after one "baton: " prefix.
func TestLongInputClipped(t *testing.T) {
	long := strings.Repeat("a", 10240)
	for _, args := range [][]string{
		{"run", "--backend", "etcd://127.0.0.1:1", long, "--", "true"},
		{"run", "--backend", "etcd://127.0.0.1:1", "--wait", long, "n", "--", "true"},
		{"run", "--backend", "etcd://127.0.0.1:1", "--" + long, "n", "--", "true"},
		{"inspect", "--backend", "etcd://127.0.0.1:1", long},
		{"help", long},
		{long},
	} {
		r := runBaton(t, nil, args...)
		if r.code != 64 {
			t.Errorf("baton %.20q… exit = %d, want 64", args, r.code)
		}
		msg, _, _ := strings.Cut(r.stderr, "\n")
		if len(r.stderr) > 2000 || !strings.Contains(msg, "…(1024") || strings.Contains(msg, "baton: baton:") {
			t.Errorf("baton %.20q… stderr (%d bytes) begins %.300q; want one \"baton: \" and the input cut, "+
				"naming its length", args, len(r.stderr), r.stderr)
		}
	}
}
