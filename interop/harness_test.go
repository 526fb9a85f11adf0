package interop_test

import (
	"path/filepath"
	"regexp"
	"testing"
	"time"
)

// side is one participant of a scenario: a client program that takes its
// grant on the lock name and runs the critical section under it.
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

// server is the engine and recipe all clients of a scenario use.
type server struct {
	engine  string // what baton's child gets in BATON_ENGINE
	backend string // baton's --backend
	// permits is the semaphore's N, 0 for other recipes: holders of
	// "permit" grants may be inside together up to it.
	permits int
	// queue lists the entries of lock name as the server holds them
	// (ZooKeeper children, etcd keys below name/).
	queue func(t *testing.T, name string) []string
	// entry is what every entry must look like, whichever client made it:
	// the shared layout.
	entry *regexp.Regexp
	// waiting, if set, checks the rest of the recipe's layout while a
	// waiter is queued behind the holders (the semaphore's guard mutex).
	waiting func(t *testing.T, name string)
}

// recipe returns srv for another recipe on the same engine: its entries
// look like entry, its queue is the directory sub below the name (""
// for the name itself, "leases" for the semaphore), and permits is the
// semaphore's N (0 otherwise).
func (srv server) recipe(entry *regexp.Regexp, sub string, permits int) server {
	q := srv.queue
	srv.entry, srv.permits = entry, permits
	if sub != "" {
		srv.queue = func(t *testing.T, name string) []string { return q(t, name+"/"+sub) }
	}
	return srv
}

// batonSide is `baton run` (or `baton elect`) taking recipe on backend:
// see batonArgv.
func batonSide(backend, who, recipe string) side {
	return side{who: who, argv: func(name, dir, who, hold string, n int) []string {
		argv := batonArgv(backend, recipe, name, dir, who, hold)
		if n == 1 {
			return argv
		}
		return loop(n, argv...)
	}}
}

// ordered checks one start order of two exclusive holders: first takes the
// lock and holds it; second queues behind it without entering; once first
// leaves, second enters.
func ordered(t *testing.T, srv server, first, second side) {
	queued(t, srv, []side{first}, second, 1)
}

// queued checks one start order: the holders take their grants one after
// another, each entering while the earlier ones are still inside (they
// share, or there is one); then waiter starts and must queue behind them
// on the server (its entry visible in the layout all clients share)
// without entering. The test releases the holders one by one in start
// order: waiter must stay out until after of them have left, then enter
// while the rest are still inside. It returns the replayed log.
func queued(t *testing.T, srv server, holders []side, waiter side, after int) verdict {
	t.Helper()
	name, dir := lockName(t), t.TempDir()
	t.Cleanup(func() { logOnFailure(t, dir) })
	touch(t, filepath.Join(dir, "start"))
	touch(t, filepath.Join(dir, "release-"+waiter.who))

	var procs []*proc
	want := map[string]int{waiter.who: 1}
	for _, h := range holders {
		want[h.who] = 1
		procs = append(procs, start(t, h.who, h.env, h.argv(name, dir, h.who, "gate", 1)...))
		waitUntil(t, h.who+" inside", 30*time.Second, func() bool { return entered(t, dir, h.who) }, procs...)
	}

	pw := start(t, waiter.who, waiter.env, waiter.argv(name, dir, waiter.who, "gate", 1)...)
	var q []string
	waitUntil(t, waiter.who+"'s entry queued", 30*time.Second, func() bool {
		q = srv.queue(t, name)
		return len(q) > len(holders)
	}, append(procs, pw)...)
	if len(q) != len(holders)+1 {
		t.Errorf("queue of %q = %q, want %d entries", name, q, len(holders)+1)
	}
	for _, e := range q {
		if !srv.entry.MatchString(e) {
			t.Errorf("entry %q of %q does not match the shared layout %v", e, name, srv.entry)
		}
	}
	if srv.waiting != nil {
		srv.waiting(t, name)
	}

	for i, h := range holders {
		if i < after {
			// A waiter that ignored the holders' entries would have
			// entered within milliseconds of queueing.
			time.Sleep(300 * time.Millisecond)
			if entered(t, dir, waiter.who) {
				t.Errorf("%s entered while %s was still inside", waiter.who, h.who)
			}
		}
		touch(t, filepath.Join(dir, "release-"+h.who))
		if i == after-1 {
			waitUntil(t, waiter.who+" inside", 30*time.Second, func() bool { return entered(t, dir, waiter.who) },
				append(procs[i+1:], pw)...)
		}
	}
	for _, p := range append(procs, pw) {
		p.succeed(t, 30*time.Second)
	}

	v := verify(t, dir, srv.permits, want)
	if len(v.grants) == len(holders)+1 {
		w := v.grants[len(holders)]
		for i, g := range v.grants[:len(holders)] {
			if g.who != holders[i].who {
				t.Errorf("grant %d went to %s, want %s (start order)", i, g.who, holders[i].who)
			}
			if left := g.exit >= 0 && g.exit < w.enter; left != (i < after) {
				t.Errorf("%s entered on line %d, %s exited on line %d: want it to enter after %d holders left",
					w.who, w.enter+1, g.who, g.exit+1, after)
			}
		}
		if w.who != waiter.who {
			t.Errorf("grant %d went to %s, want %s (the waiter)", len(holders), w.who, waiter.who)
		}
	}
	checkBatonGrants(t, v.grants, srv.engine, name)
	if q := srv.queue(t, name); len(q) != 0 {
		t.Errorf("queue of %q after every holder exited = %q, want empty", name, q)
	}
	return v
}

// interleaved runs every side n times at once with a short hold and checks
// that the holders kept the recipe's rules, each entered n times, baton's
// tokens are ordered, and the grant really passed between the clients. It
// returns the replayed log.
func interleaved(t *testing.T, srv server, n int, hold string, sides ...side) verdict {
	t.Helper()
	name, dir := lockName(t), t.TempDir()
	t.Cleanup(func() { logOnFailure(t, dir) })
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

	v := verify(t, dir, srv.permits, want)
	checkBatonGrants(t, v.grants, srv.engine, name)
	sw := kindSwitches(v.grants)
	t.Logf("%d grants, passed between different clients %d times, at most %d holders at once (%d of mixed clients)",
		len(v.grants), sw, v.peak, v.mixedPeak)
	if sw < 2 {
		t.Errorf("the grant passed between different clients %d times, want >= 2 (they did not compete)", sw)
	}
	if q := srv.queue(t, name); len(q) != 0 {
		t.Errorf("queue of %q after every holder exited = %q, want empty", name, q)
	}
	return v
}
