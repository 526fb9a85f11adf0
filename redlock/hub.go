package redlock

import (
	"sync"

	"github.com/redis/go-redis/v9"
)

// hub wakes the client's waiters one at a time (see wakeone.go). It holds
// one pub/sub connection, to the node the client listens on, subscribed
// to the client's channel and read by one goroutine owned by the Client,
// started at the first wait and stopped at Close. go-redis dials a
// connection that failed again and subscribes it anew; each confirmation,
// the first one too, wakes every waiter.
type hub struct {
	c *Client

	mu      sync.Mutex
	byNum   map[string]*wake // waiter number → its wake
	started bool
	stopped bool
	stop    chan struct{}
	wg      sync.WaitGroup // the listening goroutine
}

// wake is one waiter's wake-up.
type wake struct {
	ch   chan struct{} // closed at the next wake; nil until watched again
	refs int           // watchers: the loop overlaps two around an attempt
	// picked: the last wake was a release's message for this waiter, not
	// a (re)subscription's wake of every waiter.
	picked bool
}

func newHub(c *Client) *hub {
	return &hub{c: c, byNum: make(map[string]*wake), stop: make(chan struct{})}
}

// watchWaiter returns a channel closed when a release picks waiter number
// num (or the client's channel is subscribed anew), and a func to call
// when no longer waiting.
func (h *hub) watchWaiter(num string) (<-chan struct{}, func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	w := h.byNum[num]
	if w == nil {
		w = &wake{}
		h.byNum[num] = w
	}
	if w.ch == nil {
		w.ch = make(chan struct{})
	}
	w.refs++
	h.startLocked()
	var once sync.Once
	return w.ch, func() {
		once.Do(func() {
			h.mu.Lock()
			defer h.mu.Unlock()
			if w.refs--; w.refs <= 0 && h.byNum[num] == w {
				delete(h.byNum, num)
			}
		})
	}
}

// startLocked starts the listening goroutine once; h.mu is held.
func (h *hub) startLocked() {
	if h.started || h.stopped {
		return
	}
	h.started = true
	h.wg.Add(1)
	go h.run(h.c.nodes[h.c.wo.listen])
}

// wakeWaiter wakes waiter number num; a message for a waiter that stopped
// waiting finds nobody.
func (h *hub) wakeWaiter(num string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if w := h.byNum[num]; w != nil && w.ch != nil {
		w.fire()
		w.picked = true
	}
}

// wakeAll wakes every waiter: the client's channel has just been
// (re)subscribed, and a release published while it was not may have
// picked one of them.
func (h *hub) wakeAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, w := range h.byNum {
		if w.ch != nil {
			w.fire()
			w.picked = false
		}
	}
}

// picked reports whether the last wake of waiter num was a release's
// message for it.
func (h *hub) picked(num string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	w := h.byNum[num]
	return w != nil && w.picked
}

// fire closes w's channel, if watched; the caller holds h.mu.
func (w *wake) fire() {
	if w.ch != nil {
		close(w.ch)
		w.ch = nil
	}
}

// close stops the goroutine and waits for it.
func (h *hub) close() {
	h.mu.Lock()
	h.stopped = true
	h.mu.Unlock()
	close(h.stop)
	h.wg.Wait()
}

// run owns the pub/sub connection to node n until close.
func (h *hub) run(n *node) {
	defer h.wg.Done()
	// A failed SUBSCRIBE is kept: go-redis subscribes when it reconnects.
	ps := n.rdb.Subscribe(h.c.ctx, h.c.wo.channel)
	defer ps.Close()
	// go-redis PINGs a connection that got no message for its health
	// check interval (3s by default); a client's channel stays quiet
	// until a release picks one of its waiters, so with thousands of
	// clients those PINGs would outnumber the handoffs' requests. Once
	// per TTL is enough: polls cover a connection that died unnoticed.
	msgs := ps.ChannelWithSubscriptions(redis.WithChannelSize(256),
		redis.WithChannelHealthCheckInterval(h.c.o.TTL))
	for {
		select {
		case <-h.stop:
			return
		case m, ok := <-msgs:
			if !ok {
				return
			}
			h.deliver(m)
		}
	}
}

// deliver acts on one message of the pub/sub connection.
func (h *hub) deliver(m any) {
	switch m := m.(type) {
	case *redis.Message:
		h.wakeWaiter(m.Payload)
	case *redis.Subscription:
		if m.Kind == "subscribe" {
			h.wakeAll()
		}
	}
}
