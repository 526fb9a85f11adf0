package sqllock

import (
	"cmp"
	"slices"
	"sync"
	"time"

	"github.com/baton-go/baton/engine/leasekit"
)

// One mutex waiter per release. A release (in this process, or a NOTIFY
// from any process on PostgreSQL) wakes the oldest mutex waiter of the
// name in this process instead of every one of them: each woken waiter
// makes an attempt, so waking all of them cost as many attempts per
// handoff as there were waiters (245 requests per handoff at 2 000
// waiters on PostgreSQL, 348 on MariaDB). A handoff now costs one attempt
// per process that has waiters of the name, whatever their number.
//
// The lock is not reserved for the woken waiter: a free row admits any
// caller, so a woken waiter that gives up never holds the lock up, and one
// that finds it taken simply waits for the next release, still the oldest.
// A waiter that was woken but leaves before its attempt (ctx ended) passes
// the wake-up on to the next one.
//
// On PostgreSQL with a live LISTEN connection a release in this process
// does not wake a waiter itself: its NOTIFY comes back to this process's
// listener, which does, and waking on both would cost a second attempt
// per handoff. When the listener is down, or on lib/pq, the release wakes
// its waiter directly; a (re)connected listener wakes every waiter once,
// since releases while it was down were missed.
//
// Polls are the safety net for a lost wake-up (a NOTIFY lost with its
// connection, a release in another MySQL or SQLite process): a refused
// attempt learns the number n of this process's mutex waiters of the name,
// and the next poll comes no sooner than n × Backoff.Max/2 (jittered over
// its upper half, at least the backoff step), capped at TTL/2 (an intent
// row lives a TTL after its last write, and a waiter cut off from the
// database must notice within a TTL). So the waiters of one lock in one
// process together poll about once per Backoff.Max/2, not n times as
// often; a lone waiter keeps its backoff.
//
// The read/write lock, the semaphore and the election wake every waiter
// of the name (watch): a writer's release may admit many readers, and
// their order is the tickets' on the database, which this process cannot
// see. Election.Observe watches the same way.

// hub wakes waiters in this process when a name they wait for is released
// (by a client in this process, or by a NOTIFY). Waking is a hint: a woken
// waiter simply retries at once instead of at its next poll.
type hub struct {
	mu        sync.Mutex
	waits     map[hubKey]*waitSet
	listening map[string]bool // tables whose NOTIFYs this process receives
	seq       uint64          // the last mutexWaiter id
}

// waitSet is the waiters of one name of one table.
type waitSet struct {
	ch   chan struct{} // closed at the next release: watch
	refs int           // watch's references to ch
	// mutex are the mutex waiters, oldest (smallest id) first; first
	// holds a lone one without an allocation of its own (an uncontended
	// acquire joins too).
	mutex []*mutexWaiter
	first [1]*mutexWaiter
}

// hubKey is a name of a table: a struct, not a joined string, so that
// looking a name up allocates nothing.
type hubKey struct{ table, name string }

// mutexWaiter is one Mutex acquire waiting in this process. It lives in
// its acquire's mutexAttempts, with a spare waitSet (set) for a name
// nobody else waits for: an uncontended acquire joins too, and joined at
// the cost of four allocations when each was its own.
type mutexWaiter struct {
	id     uint64
	key    hubKey
	ch     chan struct{} // closed when picked
	picked bool          // ch is closed; arm makes a new one
	spare  waitSet
}

// waiterChans are channels of mutex waiters that left unpicked (never
// closed), for the next join: every acquire joins, and most leave
// unpicked.
var waiterChans = sync.Pool{New: func() any { return make(chan struct{}) }}

// processHub is shared by every Client of the process, so that clients on
// the same table (SQLite files opened twice, tests) wake each other.
var processHub = &hub{waits: make(map[hubKey]*waitSet), listening: make(map[string]bool)}

// tableHub is processHub seen from one table of one database server.
type tableHub struct{ id string }

func (h *tableHub) key(name string) hubKey { return hubKey{h.id, name} }

// set returns the waitSet of k, creating it (spare, if not nil, is its
// storage); under processHub.mu.
func (p *hub) set(k hubKey, spare *waitSet) *waitSet {
	w := p.waits[k]
	if w == nil {
		if w = spare; w == nil {
			w = &waitSet{}
		}
		p.waits[k] = w
	}
	return w
}

// gc deletes the waitSet of k once nobody waits; under processHub.mu.
func (p *hub) gc(k hubKey, w *waitSet) {
	if w.refs == 0 && len(w.mutex) == 0 && p.waits[k] == w {
		delete(p.waits, k)
	}
}

// watch returns a channel closed at the next wake of name, and a func to
// call when no longer waiting.
func (h *tableHub) watch(name string) (<-chan struct{}, func()) {
	k := h.key(name)
	processHub.mu.Lock()
	defer processHub.mu.Unlock()
	w := processHub.set(k, nil)
	if w.ch == nil {
		w.ch = make(chan struct{})
	}
	w.refs++
	ch := w.ch
	return ch, func() {
		processHub.mu.Lock()
		defer processHub.mu.Unlock()
		if w.ch == ch {
			w.refs--
		}
		processHub.gc(k, w)
	}
}

// join registers mw as a mutex waiter of name, youngest of all.
func (h *tableHub) join(mw *mutexWaiter, name string) {
	k := h.key(name)
	ch := waiterChans.Get().(chan struct{})
	processHub.mu.Lock()
	defer processHub.mu.Unlock()
	processHub.seq++
	mw.id, mw.key, mw.ch, mw.picked = processHub.seq, k, ch, false
	w := processHub.set(k, &mw.spare)
	if w.mutex == nil {
		w.mutex = w.first[:0]
	}
	w.mutex = append(w.mutex, mw)
}

// arm returns the channel closed when mw is next picked.
func (mw *mutexWaiter) arm() <-chan struct{} {
	processHub.mu.Lock()
	defer processHub.mu.Unlock()
	if mw.picked {
		mw.ch, mw.picked = make(chan struct{}), false
	}
	return mw.ch
}

// leave removes mw. A waiter picked since its last attempt and not
// granted passes the wake-up on: the release it stands for may have left
// the lock free.
func (mw *mutexWaiter) leave(granted bool) {
	processHub.mu.Lock()
	defer processHub.mu.Unlock()
	w := processHub.waits[mw.key]
	if w == nil {
		return
	}
	if i, ok := slices.BinarySearchFunc(w.mutex, mw.id, func(x *mutexWaiter, id uint64) int {
		return cmp.Compare(x.id, id)
	}); ok {
		w.mutex = slices.Delete(w.mutex, i, i+1)
	}
	if mw.picked && !granted {
		w.pickOne()
	}
	if !mw.picked {
		waiterChans.Put(mw.ch) // never closed, and nobody else has it now
	}
	mw.ch = nil
	processHub.gc(mw.key, w)
}

// pickOne wakes the oldest mutex waiter not woken already; under
// processHub.mu.
func (w *waitSet) pickOne() {
	for _, mw := range w.mutex {
		if !mw.picked {
			mw.picked = true
			close(mw.ch)
			return
		}
	}
}

// wakeWatchers closes watch's channel; under processHub.mu.
func (w *waitSet) wakeWatchers() {
	if w.ch != nil {
		close(w.ch)
		w.ch, w.refs = nil, 0
	}
}

// wake wakes the watchers and one mutex waiter of name (a NOTIFY).
func (h *tableHub) wake(name string) {
	k := h.key(name)
	processHub.mu.Lock()
	defer processHub.mu.Unlock()
	if w := processHub.waits[k]; w != nil {
		w.wakeWatchers()
		w.pickOne()
		processHub.gc(k, w)
	}
}

// released wakes the waiters of name after a release by this process:
// as wake, but the mutex waiter is left to the NOTIFY when this table's
// listener is live (see above).
func (h *tableHub) released(name string) {
	k := h.key(name)
	processHub.mu.Lock()
	defer processHub.mu.Unlock()
	if w := processHub.waits[k]; w != nil {
		w.wakeWatchers()
		if !processHub.listening[h.id] {
			w.pickOne()
		}
		processHub.gc(k, w)
	}
}

// wakeAll wakes every waiter on the table.
func (h *tableHub) wakeAll() {
	processHub.mu.Lock()
	defer processHub.mu.Unlock()
	for k, w := range processHub.waits {
		if k.table != h.id {
			continue
		}
		w.wakeWatchers()
		for _, mw := range w.mutex {
			if !mw.picked {
				mw.picked = true
				close(mw.ch)
			}
		}
		processHub.gc(k, w)
	}
}

// setListening records whether the table's listener is LISTENing.
func (h *tableHub) setListening(on bool) {
	processHub.mu.Lock()
	defer processHub.mu.Unlock()
	if on {
		processHub.listening[h.id] = true
	} else {
		delete(processHub.listening, h.id)
	}
}

// mutexWaiters returns the number of mutex waiters of name in this
// process.
func (h *tableHub) mutexWaiters(name string) int {
	processHub.mu.Lock()
	defer processHub.mu.Unlock()
	if w := processHub.waits[h.key(name)]; w != nil {
		return len(w.mutex)
	}
	return 0
}

// othersWait reports whether mutex waiters of name other than the
// acquire's own wait in this process: a grant then keeps the row's
// waiting mark (see statements.pgAcquire), so that its release NOTIFYs
// for them. The acquire is one of the waiters from its first attempt
// (mutexAttempts.Watch).
func (c *Client) othersWait(name string) bool { return c.hub().mutexWaiters(name) > 1 }

// pollFloor is the least time before a refused mutex waiter's next poll
// when n waiters of the lock wait in this process (see above and
// leasekit.PollFloor).
func (c *Client) pollFloor(n int) time.Duration {
	return leasekit.PollFloor(int64(n), c.o.Backoff, c.o.TTL)
}
