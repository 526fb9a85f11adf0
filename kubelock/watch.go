package kubelock

import (
	"context"
	"strconv"
	"sync"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// lingerFor is how long a name's watch stays open after its last watcher
// left: a client that locks the same name again and again keeps one watch
// instead of opening one per acquire.
const lingerFor = 10 * time.Second

// hub wakes the waiters (and Election.Observe) of this client: one watch
// per lock name, on the name's Leases (label baton.dev/lock), opened while
// anyone watches the name and a little after (lingerFor). Every event
// feeds the observer the spec records (a foreign holder's renewals); an
// event that may free something (see frees) wakes the name's waiters,
// and any change of holder wakes Election.Observe. A watch that breaks is
// reopened after a backoff, and its watchers are woken when it is back,
// since events may have been missed; meanwhile they poll, at most TTL/4
// apart.
type hub struct {
	c      *Client
	mu     sync.Mutex
	names  map[string]*nameWatch
	closed bool
	wg     sync.WaitGroup // the watch goroutines
}

// nameWatch is the watch of one lock name.
type nameWatch struct {
	lock string
	refs int
	ch   chan struct{} // closed at the next wake of the waiters
	obs  chan struct{} // closed at the next change of holder (Observe)
	// last is the Lease as the last event delivered it (nil: gone, or
	// no event yet), set before the watchers are woken, so that a waiter
	// woken by an event decides on it without reading it again.
	last   *coordv1.Lease
	cancel context.CancelFunc
	linger *time.Timer // stops the watch after lingerFor without watchers
}

func newHub(c *Client) *hub { return &hub{c: c, names: make(map[string]*nameWatch)} }

// watch returns a channel closed at the next wake of lock's waiters (any
// change of holder when holders), and the func that stops watching.
// After close the channel never closes.
func (h *hub) watch(lock string, holders bool) (<-chan struct{}, func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, func() {}
	}
	w := h.names[lock]
	if w == nil {
		ctx, cancel := context.WithCancel(h.c.ctx)
		w = &nameWatch{lock: lock, ch: make(chan struct{}), obs: make(chan struct{}), cancel: cancel}
		h.names[lock] = w
		h.wg.Add(1)
		go h.run(ctx, w)
	}
	if w.linger != nil {
		w.linger.Stop()
		w.linger = nil
	}
	w.refs++
	ch := w.ch
	if holders {
		ch = w.obs
	}
	once := sync.Once{}
	return ch, func() { once.Do(func() { h.unwatch(w) }) }
}

// unwatch drops one watcher of w; the last one arms the linger timer.
func (h *hub) unwatch(w *nameWatch) {
	h.mu.Lock()
	defer h.mu.Unlock()
	w.refs--
	if w.refs > 0 || h.closed {
		return
	}
	w.linger = time.AfterFunc(lingerFor, func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		if w.refs == 0 && h.names[w.lock] == w {
			delete(h.names, w.lock)
			w.cancel()
		}
	})
}

// wake wakes lock's observers of holders, and its waiters too when
// frees: something may have been freed (a release by this client).
func (h *hub) wake(lock string, frees bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if w := h.names[lock]; w != nil {
		close(w.obs)
		w.obs = make(chan struct{})
		if frees {
			close(w.ch)
			w.ch = make(chan struct{})
		}
	}
}

// setLast records the Lease an event delivered.
func (h *hub) setLast(w *nameWatch, obj *coordv1.Lease, gone bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	w.last = obj
	if gone {
		w.last = nil
	}
}

// latest returns the Lease of lock as its watch last delivered it, nil
// when the watch has none.
func (h *hub) latest(lock string) *coordv1.Lease {
	h.mu.Lock()
	defer h.mu.Unlock()
	if w := h.names[lock]; w != nil {
		return w.last
	}
	return nil
}

// close stops every watch and waits for their goroutines.
func (h *hub) close() {
	h.mu.Lock()
	h.closed = true
	for _, w := range h.names {
		if w.linger != nil {
			w.linger.Stop()
		}
		w.cancel()
	}
	h.names = map[string]*nameWatch{}
	h.mu.Unlock()
	h.wg.Wait()
}

// run is the goroutine of one name's watch, owned by the hub: it ends
// when ctx is cancelled (linger, Close).
func (h *hub) run(ctx context.Context, w *nameWatch) {
	defer h.wg.Done()
	sel := labelLock + "=" + nameHash(w.lock)
	var last sig // who holds and waits, as the last event showed
	for failures := 0; ctx.Err() == nil; failures++ {
		wi, err := h.c.leases.Watch(ctx, metav1.ListOptions{LabelSelector: sel})
		if err == nil {
			last = h.follow(ctx, w, wi, last)
			wi.Stop()
			failures = 0
		}
		t := time.NewTimer(h.c.o.Backoff.Delay(failures))
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
	}
}

// follow reads one watch until it ends, feeding the observer the spec
// records (a foreign holder's renewals) and waking w's watchers at the
// events that may free something, and at the first event (events may
// have been missed before it). It reads no state annotation: every
// watcher of a name receives every write of it, a waiter's refresh
// included, and decoding a busy name's state at each of them cost more
// than everything else a waiter does.
func (h *hub) follow(ctx context.Context, w *nameWatch, wi watch.Interface, last sig) sig {
	first := true
	for {
		select {
		case <-ctx.Done():
			return last
		case ev, ok := <-wi.ResultChan():
			if !ok || ev.Type == watch.Error {
				return last
			}
			obj, _ := ev.Object.(*coordv1.Lease)
			if obj == nil {
				continue
			}
			cur := sig{gone: true}
			if ev.Type != watch.Deleted {
				h.c.obs.observeSpec(obj, time.Now())
				cur = sigOf(obj)
			}
			h.setLast(w, obj, ev.Type == watch.Deleted)
			switch {
			case first || frees(last, cur):
				h.wake(w.lock, true)
			case changed(last, cur):
				h.wake(w.lock, false)
			}
			first, last = false, cur
		}
	}
}

// sig is what a waiter's wake-up depends on in a Lease: who holds (the
// spec's holderIdentity), the token counter, which moves at every grant
// and every new waiter, and the number of waiters.
type sig struct {
	holder, counter, waiters string
	gone                     bool
}

func sigOf(obj *coordv1.Lease) sig {
	return sig{holder: specHolder(obj), counter: obj.Annotations[annToken], waiters: obj.Annotations[annWaiters]}
}

// frees reports whether the change from a to b may let a waiter in: a
// waiter left the queue (it gave up, or was granted: the ones behind it
// move up, and another permit may be free), a holder left without a
// grant (no token minted: a release, or a foreign holder's change), or
// the Lease went away. A newcomer's grant frees nothing (it mints a token
// and takes no waiter out), nor does a waiter who joined, a renewal or a
// refresh: waking every waiter of a busy semaphore at each of them made
// them all read and race the holders' releases, which lost their leases.
func frees(a, b sig) bool {
	if a.gone || b.gone {
		return a != b
	}
	na, _ := strconv.Atoi(a.waiters)
	nb, _ := strconv.Atoi(b.waiters)
	return nb < na || a.counter == b.counter && a.holder != b.holder
}

// changed reports whether the change from a to b is one an observer of
// the holders cares for: any change of holder.
func changed(a, b sig) bool { return a.gone != b.gone || a.holder != b.holder }
