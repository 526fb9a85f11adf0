package sqllock

import "testing"

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
	a, b, c := h.join("n"), h.join("n"), h.join("n")
	other := h.join("m")
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
		if len(k) > len(h.id) && k[:len(h.id)] == h.id {
			t.Errorf("waitSet %q left behind", k)
		}
	}
}

// TestHubJoinAllocs: an uncontended acquire's visit to the hub (join, arm,
// leave) allocates as much as watch and its unwatch did (4): the key, the
// name's waitSet, the waiter and its channel (watch: a closure instead of
// the waiter). Without waitSet.first the waiters' slice was a fifth.
func TestHubJoinAllocs(t *testing.T) {
	h := &tableHub{id: "test://" + t.Name()}
	n := testing.AllocsPerRun(100, func() {
		mw := h.join("n")
		mw.arm()
		mw.leave(true)
	})
	if n > 4 {
		t.Errorf("join, arm, leave: %v allocations, want ≤ 4", n)
	}
}
