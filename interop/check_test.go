package interop_test

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// grant is one entry into the critical section, as logged by its holder
// (testdata/critical.sh, java/CuratorRecipes.java). token, engine, lock and
// epoch are baton's child environment (BATON_TOKEN, BATON_ENGINE,
// BATON_LOCK, BATON_EPOCH), "-" where the holder is not a baton child.
// enter and exit are the indexes of its log lines (exit -1 while inside).
type grant struct {
	who, kind                  string
	token, engine, lock, epoch string
	enter, exit                int
}

// exclusive reports whether a holder of kind excludes every other holder.
// Readers share with readers, permits with permits (up to N).
func exclusive(kind string) bool { return kind == "mutex" || kind == "write" || kind == "leader" }

// compatible reports whether a holder of kind may be inside while the
// holders of kinds others are, with permits the semaphore's N.
func compatible(kind string, others []string, permits int) bool {
	if len(others) == 0 {
		return true
	}
	if exclusive(kind) {
		return false
	}
	for _, o := range others {
		if o != kind {
			return false
		}
	}
	return kind == "read" || (kind == "permit" && len(others)+1 <= permits)
}

// verdict is the replay of one shared log.
type verdict struct {
	grants   []grant
	problems []string
	// peak is the most holders inside at once; mixedPeak the most at a
	// moment when holders of more than one client kind (curator, baton,
	// etcdctl) were inside together.
	peak, mixedPeak int
}

// checkLog replays the shared log of holders of one lock (permits is the
// semaphore's N, 0 for other recipes) and reports every violation: a
// holder entering while holders it may not share with are inside, by the
// replay of enter/exit lines or by the markers the holder saw (SEEN); a
// holder whose own marker was missing from SEEN (the witness is broken); a
// holder granted twice at once ("overlap"); an exit by someone not inside;
// a gated holder never released; a holder that never exited; and any line
// the harness does not write. Because a holder logs "enter" after creating
// its marker and "exit" before removing it, the log of holders that kept
// the rules is always clean.
func checkLog(text string, permits int) verdict {
	var v verdict
	inside := map[string]int{} // who → index in v.grants
	for i, line := range strings.Split(text, "\n") {
		if line == "" {
			continue
		}
		f := strings.Fields(line)
		bad := func(format string, args ...any) {
			v.problems = append(v.problems, fmt.Sprintf("line %d %q: ", i+1, line)+fmt.Sprintf(format, args...))
		}
		switch {
		case f[0] == "enter" && len(f) == 8:
			g := grant{who: f[1], token: f[2], engine: f[3], lock: f[4], kind: f[5], epoch: f[6], enter: i, exit: -1}
			if _, ok := inside[g.who]; ok {
				bad("%s entered while already inside", g.who)
			}
			var kinds, names []string
			for _, j := range inside {
				kinds = append(kinds, v.grants[j].kind)
				names = append(names, v.grants[j].kind+"."+v.grants[j].who)
			}
			slices.Sort(names)
			if !compatible(g.kind, kinds, permits) {
				bad("%s (%s) entered while %s were inside", g.who, g.kind, strings.Join(names, ", "))
			}
			var seen []string
			own := false
			for _, m := range strings.Split(f[7], ",") {
				k, who, ok := strings.Cut(m, ".")
				switch {
				case !ok:
					bad("marker %q is not KIND.WHO", m)
				case who == g.who && k == g.kind:
					own = true
				default:
					seen = append(seen, k)
				}
			}
			if !own {
				bad("%s's own marker is missing from what it saw", g.who)
			}
			if !compatible(g.kind, seen, permits) {
				bad("%s (%s) saw the markers of holders it may not share with", g.who, g.kind)
			}
			inside[g.who] = len(v.grants)
			v.grants = append(v.grants, g)
			v.peak = max(v.peak, len(inside))
			clients := map[string]bool{}
			for who := range inside {
				c, _, _ := strings.Cut(who, "-")
				clients[c] = true
			}
			if len(clients) > 1 {
				v.mixedPeak = max(v.mixedPeak, len(inside))
			}
		case f[0] == "exit" && len(f) == 2:
			j, ok := inside[f[1]]
			if !ok {
				bad("%s exited while not inside", f[1])
				continue
			}
			v.grants[j].exit = i
			delete(inside, f[1])
		case f[0] == "overlap" && len(f) == 2:
			bad("%s was granted again while its earlier grant was inside", f[1])
		case f[0] == "gate-timeout" && len(f) == 2:
			bad("%s was never released by the test", f[1])
		default:
			bad("not a line the harness writes")
		}
	}
	var left []string
	for who := range inside {
		left = append(left, who)
	}
	slices.Sort(left)
	for _, who := range left {
		v.problems = append(v.problems, who+" entered and never exited")
	}
	return v
}

// verify checks the log of dir: no violation, and every participant
// entered exactly as often as want says (participants not in want must not
// appear). The caller logs the log once, after its own checks too, if the
// test failed (logOnFailure).
func verify(t *testing.T, dir string, permits int, want map[string]int) verdict {
	t.Helper()
	v := checkLog(readLog(t, dir), permits)
	for _, p := range v.problems {
		t.Errorf("exclusion: %s", p)
	}
	got := map[string]int{}
	for _, g := range v.grants {
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
	return v
}

// logOnFailure shows the shared log of a failed scenario.
func logOnFailure(t *testing.T, dir string) {
	t.Helper()
	if t.Failed() {
		t.Logf("log:\n%s", readLog(t, dir))
	}
}

// checkBatonGrants checks what baton handed its children: BATON_ENGINE and
// BATON_LOCK; BATON_EPOCH equal to BATON_TOKEN for a leader; and fencing
// tokens that order what must be ordered. Of two baton grants where the
// first exited before the second entered, the second's token must be
// greater if either grant is exclusive (a writer's token exceeds every
// earlier grant's, and the next grant's exceeds the writer's) or both are
// the same holder's (its next grant comes after its own release).
// Shared grants of different holders may carry equal tokens, and a shared
// grant logged later may have been granted earlier: they are not compared.
func checkBatonGrants(t reporter, grants []grant, engine, name string) {
	t.Helper()
	n := 0
	tokens := make([]uint64, len(grants))
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
		tokens[i] = tok
		if g.kind == "leader" && g.epoch != g.token {
			t.Errorf("grant %d to %s: BATON_EPOCH=%q, want BATON_TOKEN=%q", i, g.who, g.epoch, g.token)
		}
		for j, h := range grants[:i] {
			if tokens[j] == 0 || h.exit < 0 || h.exit > g.enter {
				continue
			}
			if (exclusive(g.kind) || exclusive(h.kind) || g.who == h.who) && tok <= tokens[j] {
				t.Errorf("grant %d to %s (%s): BATON_TOKEN=%d, want > %d (grant %d to %s (%s), which left before)",
					i, g.who, g.kind, tok, tokens[j], j, h.who, h.kind)
			}
		}
	}
	if n == 0 {
		t.Errorf("no baton grant in the log")
	}
}

// reporter is the part of *testing.T the grant check reports through, so
// its own test can record the verdict without failing.
type reporter interface {
	Helper()
	Errorf(format string, args ...any)
}

// recorder is a reporter that keeps what it was told.
type recorder struct{ errs []string }

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

// kindSwitches counts how often the grant passed between clients of
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
	// e is an enter line of who holding kind that saw the markers seen
	// (its own is added).
	e := func(who, kind string, seen ...string) string {
		return fmt.Sprintf("enter %s 7 zk x %s - %s\n", who, kind, strings.Join(append([]string{kind + "." + who}, seen...), ","))
	}
	x := func(who string) string { return "exit " + who + "\n" }
	tests := []struct {
		name        string
		log         string
		permits     int
		grants      int
		problems    int
		peak, mixed int
	}{
		{"clean", e("a", "mutex") + x("a") + e("b", "mutex") + x("b"), 0, 2, 0, 1, 0},
		{"empty", "", 0, 0, 0, 0, 0},
		{"overlap seen by mkdir", e("a", "mutex") + "overlap a\n" + x("a"), 0, 1, 1, 1, 0},
		{"enter while inside", e("a", "mutex") + e("b", "mutex", "mutex.a") + x("b") + x("a"), 0, 2, 2, 2, 2},
		{"overlap only in the markers", e("a", "write") + x("a") + e("b", "write", "write.a") + x("b"), 0, 2, 1, 1, 0},
		{"own marker missing", "enter a 7 zk x mutex - mutex.b\n" + x("a"), 0, 1, 2, 1, 0},
		{"exit by another", e("a", "mutex") + x("b") + x("a"), 0, 1, 1, 1, 0},
		{"never exited", e("a", "mutex") + x("a") + e("b", "mutex"), 0, 2, 1, 1, 0},
		{"gate timeout", e("a", "mutex") + "gate-timeout a\n" + x("a"), 0, 1, 1, 1, 0},
		{"garbage", e("a", "mutex") + x("a") + "hello\n", 0, 1, 1, 1, 0},
		{"old mutex line", "enter a 7 zk x\nexit a\n", 0, 0, 2, 0, 0},
		{"readers share", e("curator-r", "read") + e("baton-r", "read", "read.curator-r") + x("curator-r") + x("baton-r"), 0, 2, 0, 2, 2},
		{"reader in a writer", e("a", "write") + e("b", "read", "write.a") + x("b") + x("a"), 0, 2, 2, 2, 2},
		{"writer in readers", e("a", "read") + e("b", "read", "read.a") + e("c", "write", "read.a", "read.b") + x("c") + x("b") + x("a"), 0, 3, 2, 3, 3},
		{"two leaders", e("curator", "leader") + e("baton", "leader", "leader.curator") + x("baton") + x("curator"), 0, 2, 2, 2, 2},
		{"permits within N", e("curator-1", "permit") + e("baton-1", "permit", "permit.curator-1") + x("curator-1") + e("baton-2", "permit", "permit.baton-1") + x("baton-1") + x("baton-2"), 2, 3, 0, 2, 2},
		{"permits past N", e("a", "permit") + e("b", "permit", "permit.a") + e("c", "permit", "permit.a", "permit.b") + x("a") + x("b") + x("c"), 2, 3, 2, 3, 3},
		{"permit of a mutex log", e("a", "permit") + e("b", "permit", "permit.a") + x("a") + x("b"), 0, 2, 2, 2, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := checkLog(tt.log, tt.permits)
			if len(v.grants) != tt.grants || len(v.problems) != tt.problems || v.peak != tt.peak || v.mixedPeak != tt.mixed {
				t.Errorf("checkLog(%q, %d) = %d grants, problems %q, peak %d, mixed peak %d; want %d grants, %d problems, peak %d, mixed peak %d",
					tt.log, tt.permits, len(v.grants), v.problems, v.peak, v.mixedPeak, tt.grants, tt.problems, tt.peak, tt.mixed)
			}
		})
	}
	if got := kindSwitches([]grant{{who: "curator-1"}, {who: "curator-2"}, {who: "baton-1"}, {who: "curator-1"}}); got != 2 {
		t.Errorf("kindSwitches(curator, curator, baton, curator) = %d, want 2", got)
	}
}

// TestCheckBatonGrants shows which token orders the grant check rejects.
func TestCheckBatonGrants(t *testing.T) {
	g := func(who, kind, token string, enter, exit int) grant {
		return grant{who: who, kind: kind, token: token, engine: "zk", lock: "x", epoch: "-", enter: enter, exit: exit}
	}
	tests := []struct {
		name   string
		grants []grant
		fail   bool
	}{
		{"mutex rising", []grant{g("baton-1", "mutex", "5", 0, 1), g("curator", "mutex", "-", 2, 3), g("baton-2", "mutex", "9", 4, 5)}, false},
		{"mutex repeated", []grant{g("baton-1", "mutex", "5", 0, 1), g("baton-2", "mutex", "5", 2, 3)}, true},
		{"readers together share", []grant{g("baton-1", "read", "5", 0, 3), g("baton-2", "read", "5", 1, 2)}, false},
		{"reader after reader, other holder, lower", []grant{g("baton-1", "read", "6", 0, 1), g("baton-2", "read", "5", 2, 3)}, false},
		{"reader after own reader, equal", []grant{g("baton-1", "read", "5", 0, 1), g("baton-1", "read", "5", 2, 3)}, true},
		{"writer after reader, lower", []grant{g("baton-1", "read", "6", 0, 1), g("baton-2", "write", "5", 2, 3)}, true},
		{"reader after writer, equal", []grant{g("baton-1", "write", "6", 0, 1), g("baton-2", "read", "6", 2, 3)}, true},
		{"no baton grant", []grant{g("curator", "mutex", "-", 0, 1)}, true},
		{"leader epoch differs", []grant{{who: "baton", kind: "leader", token: "5", engine: "zk", lock: "x", epoch: "4", enter: 0, exit: 1}}, true},
		{"leader epoch equal", []grant{{who: "baton", kind: "leader", token: "5", engine: "zk", lock: "x", epoch: "5", enter: 0, exit: 1}}, false},
		{"wrong lock", []grant{{who: "baton", kind: "mutex", token: "5", engine: "zk", lock: "y", epoch: "-", enter: 0, exit: 1}}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r recorder
			checkBatonGrants(&r, tt.grants, "zk", "x")
			if failed := len(r.errs) > 0; failed != tt.fail {
				t.Errorf("checkBatonGrants(%v) reported %q, want failure = %v", tt.grants, r.errs, tt.fail)
			}
		})
	}
}
