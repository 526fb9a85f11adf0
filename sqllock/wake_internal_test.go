package sqllock

import (
	"testing"
	"time"

	"github.com/baton-go/baton"
)

// joined joins a new mutex waiter of name to h.
func joined(h *tableHub, name string) *mutexWaiter {
	mw := new(mutexWaiter)
	h.join(mw, name)
	return mw
}

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// TestHubWakesOneMutexWaiter: a release wakes the oldest mutex waiter of
// the name only, and every watcher; a waiter woken that leaves without a
// grant passes the wake-up on; with the table's listener live a release in
// this process leaves the mutex waiter to the NOTIFY.
func TestHubWakesOneMutexWaiter(t *testing.T) {
	h := &tableHub{id: "test://" + t.Name()}
	a, b, c := joined(h, "n"), joined(h, "n"), joined(h, "n")
	other := joined(h, "m")
	ca, cb, cc, co := a.arm(), b.arm(), c.arm(), other.arm()
	watch, unwatch := h.watch("n")
	if n := h.mutexWaiters("n"); n != 3 {
		t.Fatalf("mutexWaiters = %d, want 3", n)
	}

	h.released("n")
	if !closed(ca) || closed(cb) || closed(cc) || !closed(watch) || closed(co) {
		t.Fatalf("after a release: a %v b %v c %v watch %v, want only a and the watcher woken",
			closed(ca), closed(cb), closed(cc), closed(watch))
	}
	unwatch()

	// a was woken but leaves before its attempt (its ctx ended): b next.
	a.leave(false)
	if !closed(cb) || closed(cc) {
		t.Fatalf("a left woken: b %v c %v, want b woken only", closed(cb), closed(cc))
	}
	// b attempts (arms again) and is refused; the next NOTIFY wakes b
	// again, still the oldest.
	cb = b.arm()
	h.setListening(true)
	h.released("n")
	if closed(cb) || closed(cc) {
		t.Fatal("a release with the listener live woke a mutex waiter; the NOTIFY does")
	}
	h.wake("n")
	if !closed(cb) || closed(cc) {
		t.Fatalf("NOTIFY: b %v c %v, want b woken only", closed(cb), closed(cc))
	}
	// b granted: nothing passes on.
	b.leave(true)
	if closed(cc) {
		t.Fatal("a granted waiter passed its wake-up on")
	}
	h.setListening(false)
	h.wakeAll()
	if !closed(cc) || !closed(co) {
		t.Fatal("wakeAll left a waiter asleep")
	}
	c.leave(false)
	other.leave(false)
	processHub.mu.Lock()
	defer processHub.mu.Unlock()
	for k := range processHub.waits {
		if k.table == h.id {
			t.Errorf("waitSet %q left behind", k.name)
		}
	}
}

// TestHubJoinAllocs: an uncontended acquire's visit to the hub (join, arm,
// leave) allocates nothing: the waiter and its name's waitSet live in the
// acquire's mutexAttempts, the key is a struct, and the channel of a
// waiter that left unpicked serves the next. It cost four allocations
// (the key, the waitSet, the waiter, its channel); without waitSet.first
// the waiters' slice was a fifth. A picked waiter's channel is closed,
// and the next join makes a new one.
func TestHubJoinAllocs(t *testing.T) {
	h := &tableHub{id: "test://" + t.Name()}
	mw := new(mutexWaiter)
	n := testing.AllocsPerRun(100, func() {
		h.join(mw, "n")
		mw.arm()
		mw.leave(true)
	})
	// The race detector drops sync.Pool's contents at random: the count
	// is checked without it (scripts/test.sh runs this test again so).
	if n != 0 && !raceEnabled {
		t.Errorf("join, arm, leave: %v allocations, want 0", n)
	}
	h.join(mw, "n")
	ch := mw.arm()
	h.released("n")
	if !closed(ch) {
		t.Fatal("a release did not wake the lone waiter")
	}
	mw.leave(true)
	h.join(mw, "n")
	if closed(mw.arm()) {
		t.Error("a join after a picked waiter left reused its closed channel")
	}
	mw.leave(true)
}

// TestIntentRefreshBeforeLapse: a mutex waiter's intent row is refreshed
// once 3/8 of its TTL has passed, not earlier, and that age plus the
// longest gap between a waiter's attempts (PollFloor, any number of
// waiters) stays below the TTL, so the row never lapses while its waiter
// waits.
func TestIntentRefreshBeforeLapse(t *testing.T) {
	const ttl = 8 * time.Second
	c := &Client{o: Options{TTL: ttl, Backoff: baton.Backoff{Base: 10 * time.Millisecond, Max: ttl / 4}}}
	w := &waitIntent{c: c, slot: intentSlotBase, since: time.Now().Add(-time.Minute)}
	for _, tc := range []struct {
		age time.Duration
		due bool
	}{{ttl / 4, false}, {ttl*3/8 - 100*time.Millisecond, false}, {ttl*3/8 + 100*time.Millisecond, true}} {
		w.written = time.Now().Add(-tc.age)
		if got := w.due(); got != tc.due {
			t.Errorf("due() with the row written %v ago (TTL %v) = %v, want %v", tc.age, ttl, got, tc.due)
		}
	}
	var most time.Duration
	for range 10000 {
		most = max(most, c.pollFloor(100000))
	}
	if lapse := intentRefresh(ttl) + most; lapse >= ttl*15/16 {
		t.Errorf("refresh age %v + longest poll gap %v = %v, want well below the row's TTL %v", intentRefresh(ttl), most, lapse, ttl)
	}
}
