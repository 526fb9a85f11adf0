package main_test

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// helpWidth is the widest line a help may have: an 80-column terminal.
const helpWidth = 80

// layoutFaults lists the lines of a help text that break its layout: wider
// than helpWidth, or a prose line (neither indented nor a heading) ended
// early, not at the end of a sentence, although the next prose line's
// first word would have fit on it.
func layoutFaults(text string) []string {
	var faults []string
	lines := strings.Split(text, "\n")
	for i, line := range lines {
		if utf8.RuneCountInString(line) > helpWidth {
			faults = append(faults, "too wide: "+line)
		}
		if i+1 == len(lines) || !prose(line) || !prose(lines[i+1]) || strings.HasSuffix(line, ":") || strings.HasSuffix(line, ".") {
			continue
		}
		next, _, _ := strings.Cut(lines[i+1], " ")
		if utf8.RuneCountInString(line)+1+utf8.RuneCountInString(next) <= helpWidth-8 {
			faults = append(faults, "ragged: "+line)
		}
	}
	return faults
}

// prose reports whether a help line is running text: not blank, not an
// indented list or table row.
func prose(line string) bool { return line != "" && line[0] != ' ' }

// TestHelpLayout: baton help clean (and every command's help) fits an
// 80-column terminal and its paragraphs are filled, not garbled.
func TestHelpLayout(t *testing.T) {
	for _, c := range []string{"", "run", "elect", "inspect", "clean", "demo"} {
		r := runBaton(t, nil, strings.Fields("help "+c)...)
		if r.code != 0 {
			t.Fatalf("baton help %s exit = %d", c, r.code)
		}
		for _, f := range layoutFaults(r.stdout) {
			t.Errorf("baton help %s: %s", c, f)
		}
	}
}

// TestHelpCleanParagraphs: baton help clean keeps the advice on raising
// the fence with --force-release, where it applies, and says in one
// paragraph which engines clean refuses.
func TestHelpCleanParagraphs(t *testing.T) {
	r := runBaton(t, nil, "help", "clean")
	var fence, refused bool
	for _, p := range strings.Split(r.stdout, "\n\n") {
		if strings.Contains(p, "raise the fence") {
			fence = strings.Contains(p, "ENTRY") && !strings.Contains(p, "SQL")
		}
		if strings.Contains(p, "exits 64") {
			refused = strings.Contains(p, "SQL, Redis and\nRedlock") || strings.Contains(p, "SQL, Redis and Redlock")
		}
	}
	if !fence || !refused {
		t.Errorf("baton help clean: fence advice beside --force-release %v, engines refused in one paragraph %v:\n%s",
			fence, refused, r.stdout)
	}
}

// TestHelpRunKilledWaiter: baton help run says, next to --ttl, what a
// waiter killed while waiting costs on each engine: the lock for up to
// its TTL on ZooKeeper and etcd (its entry becomes the holder), those
// queued after it on SQL and Redis RW locks (and SQL's semaphores and
// elections), and no one behind a mutex on SQL, Redis and Redlock.
func TestHelpRunKilledWaiter(t *testing.T) {
	r := runBaton(t, nil, "help", "run")
	ttl := r.stdout[strings.Index(r.stdout, "  --ttl D"):strings.Index(r.stdout, "  --wait D")]
	text := strings.Join(strings.Fields(ttl), " ")
	for _, want := range []string{
		"A waiter killed while it waits",
		"On ZooKeeper and etcd its entry becomes the holder when its turn comes and keeps the lock from everyone for up to that TTL",
		"on SQL (RW locks, semaphores, elections) and Redis (RW locks) it holds back the waiters queued after it",
		"A mutex waiter on SQL, Redis or Redlock blocks no one",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("baton help run, --ttl, does not say %q:\n%s", want, ttl)
		}
	}
}
