package interop_test

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// side is one participant of a scenario: a client program that takes the
// lock name and runs the critical section under it.
type side struct {
	who string
	env []string
	// gated sides create DIR/ready-WHO once connected and wait for
	// DIR/start, so a slow starter (a JVM) does not lose the race by
	// arriving late.
	gated bool
	// argv runs the critical section n times as who under lock name, each
	// time holding for hold ("0.05" seconds, or "gate").
	argv func(name, dir, who, hold string, n int) []string
}

// server is the engine both clients of a scenario lock on.
type server struct {
	engine  string // what baton's child gets in BATON_ENGINE
	backend string // baton's --backend
	// queue lists the entries of lock name as the server holds them
	// (ZooKeeper children, etcd keys below name/).
	queue func(t *testing.T, name string) []string
	// entry is what every entry must look like, whichever client made it:
	// the shared layout.
	entry *regexp.Regexp
}

func batonSide(backend, who string) side {
	return side{who: who, argv: func(name, dir, who, hold string, n int) []string {
		argv := batonRun(backend, name, dir, who, hold)
		if n == 1 {
			return argv
		}
		return loop(n, argv...)
	}}
}

// ordered checks one start order: first takes the lock and holds it until
// the test releases it; second starts and must queue behind it on the
// server (its entry visible in the layout both share) without entering;
// once first leaves, second enters.
func ordered(t *testing.T, srv server, first, second side) {
	name, dir := lockName(t), t.TempDir()
	t.Cleanup(func() { logOnFailure(t, dir) })
	touch(t, filepath.Join(dir, "start"))
	touch(t, filepath.Join(dir, "release-"+second.who))

	p1 := start(t, first.who, first.env, first.argv(name, dir, first.who, "gate", 1)...)
	waitUntil(t, first.who+" inside", 30*time.Second, func() bool { return entered(t, dir, first.who) }, p1)

	p2 := start(t, second.who, second.env, second.argv(name, dir, second.who, "gate", 1)...)
	var q []string
	waitUntil(t, second.who+"'s entry queued behind "+first.who+"'s", 30*time.Second, func() bool {
		q = srv.queue(t, name)
		return len(q) >= 2
	}, p1, p2)
	if len(q) != 2 {
		t.Errorf("queue of %q = %q, want 2 entries", name, q)
	}
	for _, e := range q {
		if !srv.entry.MatchString(e) {
			t.Errorf("entry %q of %q does not match the shared layout %v", e, name, srv.entry)
		}
	}
	// A second client that ignored the first's entry would have entered
	// (and logged an overlap) within milliseconds of queueing.
	time.Sleep(300 * time.Millisecond)
	if got, want := readLog(t, dir), "enter "+first.who; !strings.HasPrefix(got, want) || strings.Count(got, "\n") != 1 {
		t.Errorf("while %s holds and %s is queued, log = %q, want only %s's enter line", first.who, second.who, got, first.who)
	}

	touch(t, filepath.Join(dir, "release-"+first.who))
	p1.succeed(t, 30*time.Second)
	p2.succeed(t, 30*time.Second)

	grants := verify(t, dir, map[string]int{first.who: 1, second.who: 1})
	if len(grants) == 2 && (grants[0].who != first.who || grants[1].who != second.who) {
		t.Errorf("grants went to %s then %s, want %s then %s", grants[0].who, grants[1].who, first.who, second.who)
	}
	checkBatonGrants(t, grants, srv.engine, name)
}

// interleaved runs every side n times at once with a short hold and checks
// that the holders never overlapped, each entered n times, baton's tokens
// rose, and the lock really passed between the two clients.
func interleaved(t *testing.T, srv server, n int, sides ...side) {
	name, dir := lockName(t), t.TempDir()
	t.Cleanup(func() { logOnFailure(t, dir) })
	const hold = "0.05"
	var procs []*proc
	want := map[string]int{}
	for _, s := range sides {
		want[s.who] = n
		if s.gated {
			procs = append(procs, start(t, s.who, s.env, s.argv(name, dir, s.who, hold, n)...))
		}
	}
	for _, s := range sides {
		if s.gated {
			ready := filepath.Join(dir, "ready-"+s.who)
			waitUntil(t, s.who+" connected", 30*time.Second, func() bool { return exists(ready) }, procs...)
		}
	}
	touch(t, filepath.Join(dir, "start"))
	for _, s := range sides {
		if !s.gated {
			procs = append(procs, start(t, s.who, s.env, s.argv(name, dir, s.who, hold, n)...))
		}
	}
	for _, p := range procs {
		p.succeed(t, 60*time.Second)
	}

	grants := verify(t, dir, want)
	checkBatonGrants(t, grants, srv.engine, name)
	sw := kindSwitches(grants)
	t.Logf("%d grants, the lock passed between different clients %d times", len(grants), sw)
	if sw < 2 {
		t.Errorf("the lock passed between different clients %d times, want >= 2 (they did not compete)", sw)
	}
	if q := srv.queue(t, name); len(q) != 0 {
		t.Errorf("queue of %q after every holder exited = %q, want empty", name, q)
	}
}
