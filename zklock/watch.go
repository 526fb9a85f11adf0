package zklock

import (
	"sync"

	"github.com/go-zookeeper/zk"
)

// watchSet shares go-zookeeper data watches among the waiters of one
// session.
//
// go-zookeeper v1.0.4 cannot remove a watch (it has no removeWatches
// call), and every GetW appends a channel to its watcher list that stays
// there until the node changes or the session ends; the server keeps one
// watch per path and session. If each waiter set its own watch, every
// cancelled waiter would leave a channel behind. So the first waiter on
// an entry sets the watch and later waiters of the session reuse its
// channel while it has not fired: a cancelled waiter's goroutine ends at
// once, and what stays registered until the entry changes or the session
// ends is one watch per watched entry, however many waiters gave up on it.
//
// A go-zookeeper watch channel receives one event into its buffer and is
// then closed, so every goroutine selecting on a shared channel wakes,
// and a receive that does not block tells that it fired (consuming the
// event harms nobody: any receive means "changed").
type watchSet struct {
	mu    sync.Mutex
	m     map[string]*dataWatch
	sweep int // the size at which the next new watch sweeps out fired ones
}

// dataWatch is one GetW on an entry, in flight until ready is closed.
type dataWatch struct {
	ready chan struct{}
	ch    <-chan zk.Event // set before ready closes, nil with err
	err   error
}

// join returns the live watch on path, or a new one (first) that the
// caller must set up and then settle.
func (w *watchSet) join(path string) (dw *dataWatch, first bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if dw := w.m[path]; dw != nil && !dw.firedLocked() {
		return dw, false
	}
	if w.m == nil {
		w.m = make(map[string]*dataWatch)
	}
	if len(w.m) >= w.sweep {
		for p, d := range w.m {
			if d.firedLocked() {
				delete(w.m, p)
			}
		}
		w.sweep = max(64, 2*len(w.m))
	}
	dw = &dataWatch{ready: make(chan struct{})}
	w.m[path] = dw
	return dw, true
}

// settle records the first waiter's GetW result and wakes the others. A
// failed watch is forgotten, so the next waiter sets its own.
func (w *watchSet) settle(path string, dw *dataWatch, ch <-chan zk.Event, err error) {
	w.mu.Lock()
	dw.ch, dw.err = ch, err
	if err != nil && w.m[path] == dw {
		delete(w.m, path)
	}
	close(dw.ready)
	w.mu.Unlock()
}

// forget drops dw once it fired, unless a newer watch replaced it.
func (w *watchSet) forget(path string, dw *dataWatch) {
	w.mu.Lock()
	if w.m[path] == dw {
		delete(w.m, path)
	}
	w.mu.Unlock()
}

// size is the number of watches the set keeps (for tests).
func (w *watchSet) size() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.m)
}

// firedLocked reports a settled watch whose event has arrived; a watch in
// flight has not fired.
func (dw *dataWatch) firedLocked() bool {
	select {
	case <-dw.ready:
	default:
		return false
	}
	if dw.err != nil {
		return true
	}
	select {
	case <-dw.ch:
		return true
	default:
		return false
	}
}
