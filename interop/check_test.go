package interop_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// grant is one entry into the critical section, as logged by its holder.
// token, engine and lock are baton's child environment (BATON_TOKEN,
// BATON_ENGINE, BATON_LOCK), "-" where the holder is not a baton child.
type grant struct {
	who, token, engine, lock string
}

// checkLog replays the shared log and returns the grants in order and every
// violation: an overlap a holder saw (its mkdir of the marker failed), an
// enter while another holder had not exited, an exit by someone not
// inside, a gated holder that was never released, a holder that never
// exited, and any line the harness does not write. Because a holder logs
// "enter" after its mkdir succeeded and "exit" before its rmdir, a log of
// holders that never overlapped is always clean.
func checkLog(text string) (grants []grant, problems []string) {
	inside := ""
	for i, line := range strings.Split(text, "\n") {
		if line == "" {
			continue
		}
		f := strings.Fields(line)
		bad := func(format string, args ...any) {
			problems = append(problems, fmt.Sprintf("line %d %q: ", i+1, line)+fmt.Sprintf(format, args...))
		}
		switch {
		case f[0] == "enter" && (len(f) == 2 || len(f) == 5):
			if inside != "" {
				bad("%s entered while %s was inside", f[1], inside)
			}
			g := grant{who: f[1], token: "-", engine: "-", lock: "-"}
			if len(f) == 5 {
				g.token, g.engine, g.lock = f[2], f[3], f[4]
			}
			grants = append(grants, g)
			inside = f[1]
		case f[0] == "exit" && len(f) == 2:
			if inside != f[1] {
				bad("%s exited while %q was inside", f[1], inside)
			}
			inside = ""
		case f[0] == "overlap" && len(f) == 2:
			bad("%s was granted the lock while another holder was inside", f[1])
		case f[0] == "gate-timeout" && len(f) == 2:
			bad("%s was never released by the test", f[1])
		default:
			bad("not a line the harness writes")
		}
	}
	if inside != "" {
		problems = append(problems, inside+" entered and never exited")
	}
	return grants, problems
}

// verify checks the log of dir: no violation, and every participant
// entered exactly as often as want says (participants not in want must not
// appear). It returns the grants in log order. The caller logs the log
// once, after its own checks too, if the test failed (logOnFailure).
func verify(t *testing.T, dir string, want map[string]int) []grant {
	t.Helper()
	text := readLog(t, dir)
	grants, problems := checkLog(text)
	for _, p := range problems {
		t.Errorf("mutual exclusion: %s", p)
	}
	got := map[string]int{}
	for _, g := range grants {
		got[g.who]++
	}
	for who, n := range want {
		if got[who] != n {
			t.Errorf("%s entered %d times, want %d", who, got[who], n)
		}
	}
	for who, n := range got {
		if _, ok := want[who]; !ok {
			t.Errorf("%s entered %d times, want 0 (not a participant)", who, n)
		}
	}
	return grants
}

// logOnFailure shows the shared log of a failed scenario.
func logOnFailure(t *testing.T, dir string) {
	t.Helper()
	if t.Failed() {
		t.Logf("log:\n%s", readLog(t, dir))
	}
}

// checkBatonGrants checks what baton handed its children: BATON_ENGINE,
// BATON_LOCK, and BATON_TOKEN strictly increasing across all of baton's
// grants of the name, whatever other clients were granted in between.
func checkBatonGrants(t *testing.T, grants []grant, engine, name string) {
	t.Helper()
	var last uint64
	n := 0
	for i, g := range grants {
		if !strings.HasPrefix(g.who, "baton") {
			continue
		}
		n++
		if g.engine != engine || g.lock != name {
			t.Errorf("grant %d to %s: BATON_ENGINE=%q BATON_LOCK=%q, want %q %q", i, g.who, g.engine, g.lock, engine, name)
		}
		tok, err := strconv.ParseUint(g.token, 10, 64)
		if err != nil {
			t.Errorf("grant %d to %s: BATON_TOKEN=%q, want a decimal uint64", i, g.who, g.token)
			continue
		}
		if tok <= last {
			t.Errorf("grant %d to %s: BATON_TOKEN=%d, want > %d (the previous baton grant's)", i, g.who, tok, last)
		}
		last = tok
	}
	if n == 0 {
		t.Errorf("no baton grant in the log")
	}
}

// kindSwitches counts how often the lock passed between clients of
// different kinds (the text before the first "-" of who: "curator",
// "baton", "etcdctl"): evidence that they really competed.
func kindSwitches(grants []grant) int {
	n := 0
	for i := 1; i < len(grants); i++ {
		a, _, _ := strings.Cut(grants[i-1].who, "-")
		b, _, _ := strings.Cut(grants[i].who, "-")
		if a != b {
			n++
		}
	}
	return n
}

// TestCheckLog shows that the checker catches what it is for: a checker
// that cannot fail would make every interop test pass.
func TestCheckLog(t *testing.T) {
	tests := []struct {
		name     string
		log      string
		grants   int
		problems int
	}{
		{"clean", "enter a\nexit a\nenter b 7 zk x\nexit b\n", 2, 0},
		{"empty", "", 0, 0},
		{"overlap seen by mkdir", "enter a\noverlap b\nexit a\n", 1, 1},
		{"enter while inside", "enter a\nenter b 7 zk x\nexit b\nexit a\n", 2, 2},
		{"exit by another", "enter a\nexit b\n", 1, 1},
		{"never exited", "enter a\nexit a\nenter b\n", 2, 1},
		{"gate timeout", "enter a\ngate-timeout a\nexit a\n", 1, 1},
		{"garbage", "enter a\nexit a\nhello\n", 1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			grants, problems := checkLog(tt.log)
			if len(grants) != tt.grants || len(problems) != tt.problems {
				t.Errorf("checkLog(%q) = %d grants, problems %q; want %d grants, %d problems",
					tt.log, len(grants), problems, tt.grants, tt.problems)
			}
		})
	}
	if got := kindSwitches([]grant{{who: "curator-1"}, {who: "curator-2"}, {who: "baton-1"}, {who: "curator-1"}}); got != 2 {
		t.Errorf("kindSwitches(curator, curator, baton, curator) = %d, want 2", got)
	}
}
