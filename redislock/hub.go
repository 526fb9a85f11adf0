package redislock

import (
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// hub wakes the client's waiters when a name they wait for is released:
// by a release of this client directly, and by any client through the
// name's channel on the client's one pub/sub connection. Waking is a hint:
// a woken waiter retries at once instead of at its next backoff step, and
// a missed message (published before the SUBSCRIBE landed, or lost with a
// connection) only costs that backoff step.
//
// The pub/sub connection is started at the first wait and run by one
// goroutine owned by the Client; channels are subscribed while at least one
// waiter watches them and unsubscribed when the last one stops.
type hub struct {
	c *Client

	mu      sync.Mutex
	waits   map[string]*waitSet // channel → waiters of the next wake
	refs    map[string]int      // channel → watchers (subscription wanted)
	started bool
	stopped bool
	kick    chan struct{}
	stop    chan struct{}
	done    chan struct{}
}

type waitSet struct{ ch chan struct{} }

func newHub(c *Client) *hub {
	return &hub{
		c:     c,
		waits: make(map[string]*waitSet),
		refs:  make(map[string]int),
		kick:  make(chan struct{}, 1),
		stop:  make(chan struct{}),
		done:  make(chan struct{}),
	}
}

// watch returns a channel closed at the next wake of channel ch, and a func
// to call when no longer waiting.
func (h *hub) watch(ch string) (<-chan struct{}, func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	w := h.waits[ch]
	if w == nil {
		w = &waitSet{ch: make(chan struct{})}
		h.waits[ch] = w
	}
	h.refs[ch]++
	if h.refs[ch] == 1 && !h.c.o.NoPubSub && !h.stopped {
		if !h.started {
			h.started = true
			go h.run()
		}
		kickCh(h.kick)
	}
	var once sync.Once
	return w.ch, func() {
		once.Do(func() {
			h.mu.Lock()
			defer h.mu.Unlock()
			h.refs[ch]--
			if h.refs[ch] <= 0 {
				delete(h.refs, ch)
				if h.waits[ch] == w {
					delete(h.waits, ch)
				}
				kickCh(h.kick)
			}
		})
	}
}

// wake wakes the waiters of channel ch.
func (h *hub) wake(ch string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if w := h.waits[ch]; w != nil {
		close(w.ch)
		delete(h.waits, ch)
	}
}

// close stops the pub/sub goroutine and waits for it.
func (h *hub) close() {
	h.mu.Lock()
	started := h.started
	h.stopped = true
	h.mu.Unlock()
	close(h.stop)
	if started {
		<-h.done
	}
}

func kickCh(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// run owns the pub/sub connection until close.
func (h *hub) run() {
	defer close(h.done)
	// No channel yet: Subscribe does not connect until the first one.
	ps := h.c.rdb.Subscribe(h.c.ctx)
	defer ps.Close()
	msgs := ps.Channel(redis.WithChannelSize(256))
	subscribed := make(map[string]bool)
	retry := time.NewTicker(time.Second) // re-sync after a failed SUBSCRIBE
	defer retry.Stop()
	for {
		h.sync(ps, subscribed)
		select {
		case <-h.stop:
			return
		case m, ok := <-msgs:
			if !ok {
				return
			}
			h.wake(m.Channel)
		case <-h.kick:
		case <-retry.C:
		}
	}
}

// sync subscribes the channels somebody watches and unsubscribes the
// others, each call bounded so that a dead server cannot hold the loop.
func (h *hub) sync(ps *redis.PubSub, subscribed map[string]bool) {
	h.mu.Lock()
	var add, drop []string
	for ch := range h.refs {
		if !subscribed[ch] {
			add = append(add, ch)
		}
	}
	for ch := range subscribed {
		if h.refs[ch] == 0 {
			drop = append(drop, ch)
		}
	}
	h.mu.Unlock()
	if len(add) == 0 && len(drop) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(h.c.ctx, time.Second)
	defer cancel()
	if len(add) > 0 && ps.Subscribe(ctx, add...) == nil {
		for _, ch := range add {
			subscribed[ch] = true
		}
	}
	if len(drop) > 0 && ps.Unsubscribe(ctx, drop...) == nil {
		for _, ch := range drop {
			delete(subscribed, ch)
		}
	}
}
