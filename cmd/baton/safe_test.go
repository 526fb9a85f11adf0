package main_test

import (
	"strings"
	"testing"
)

// secretCases are passwords as typed in a backend URL (unescaped '/',
// '#', '?', '@', '%' included) with the fragments that must never be
// printed.
var secretCases = []struct{ typed, decoded string }{
	{"S3/cr#t?xq", "S3/cr#t?xq"},
	{"Zq%zzW@k/9", "Zq%zzW@k/9"},
	{"Pw%2Fenc%40X", "Pw/enc@X"},
}

// TestRedactOutputs: a password in --backend, whatever it holds, appears
// in no output — usage errors (text and JSON), connect failures of run
// and inspect, debug records — and a connecting command warns that the
// password was on the command line.
func TestRedactOutputs(t *testing.T) {
	for _, sc := range secretCases {
		ui := "alice:" + sc.typed + "@"
		tests := []struct {
			name     string
			args     []string
			code     int
			warnArgv bool
		}{
			{"usage error", []string{"run", "--backend", "mysql://" + ui + "127.0.0.1:1/db?bogus=1", "n", "--", "true"}, 64, false},
			{"usage error json", []string{"run", "--log-format", "json", "--backend", "mysql://" + ui + "127.0.0.1:1/db?bogus=1", "n", "--", "true"}, 64, false},
			{"unknown scheme", []string{"run", "--backend", "consul://" + ui + "127.0.0.1:1", "n", "--", "true"}, 64, false},
			{"inspect unreachable", []string{"inspect", "--connect-timeout", "300ms", "--backend", "postgres://" + ui + "127.0.0.1:1/db?sslmode=disable", "n"}, 69, true},
			{"run json debug", []string{"run", "--log-format", "json", "--log-level", "debug", "--connect-timeout", "300ms",
				"--backend", "etcd://" + ui + "127.0.0.1:1", "n", "--", "true"}, 69, true},
			{"run redis", []string{"run", "--connect-timeout", "300ms", "--backend", "redis://" + ui + "127.0.0.1:1/0", "n", "--", "true"}, 69, true},
		}
		for _, tt := range tests {
			t.Run(sc.typed+"/"+tt.name, func(t *testing.T) {
				t.Parallel()
				r := runBaton(t, nil, tt.args...)
				if r.code != tt.code {
					t.Errorf("baton %s exit = %d, want %d; stderr:\n%s", tt.name, r.code, tt.code, r.stderr)
				}
				noSecret(t, r.stdout+r.stderr, sc.typed, sc.decoded)
				if got := strings.Contains(r.stderr, "--backend holds a password"); got != tt.warnArgv {
					t.Errorf("argv password warning shown = %v, want %v; stderr:\n%s", got, tt.warnArgv, r.stderr)
				}
			})
		}
	}
}

// TestRedactNoWarningFromEnv: the same password in BATON_BACKEND is not
// on the command line: no warning, and still never printed.
func TestRedactNoWarningFromEnv(t *testing.T) {
	sc := secretCases[0]
	r := runBaton(t, []string{"BATON_BACKEND=etcd://alice:" + sc.typed + "@127.0.0.1:1"}, "run", "--connect-timeout", "300ms", "n", "--", "true")
	if r.code != 69 {
		t.Errorf("run exit = %d, want 69; stderr:\n%s", r.code, r.stderr)
	}
	if strings.Contains(r.stderr, "--backend holds a password") {
		t.Errorf("warned of a command-line password given in BATON_BACKEND:\n%s", r.stderr)
	}
	noSecret(t, r.stdout+r.stderr, sc.typed, sc.decoded)
}

// noSecret fails when out shows a password, or a recognisable part of it.
func noSecret(t *testing.T, out string, forms ...string) {
	t.Helper()
	for _, f := range forms {
		for _, frag := range []string{f, f[:5], f[len(f)-5:]} {
			if strings.Contains(out, frag) {
				t.Errorf("output shows %q (of a password):\n%s", frag, out)
			}
		}
	}
}
