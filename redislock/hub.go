package redislock

import (
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// hub wakes the client's waiters. Waking is a hint: a woken waiter
// retries at once instead of at its next poll, and a missed message
// (published before the SUBSCRIBE landed, or lost with a connection) only
// costs that poll.
//
// Two kinds of wake-up share the client's one pub/sub connection:
//   - a name's channel wakes everyone watching it (read/write lock and
//     semaphore waiters, Election.Observe, and every waiter of a client
//     that cannot be woken one at a time): by a release of this client
//     directly, and by any client's release through the channel;
//   - the client's own channel (see wakeone.go) wakes one waiter of a
//     mutex or an election: a release picks the waiter and publishes its
//     number there. (Re)subscribing it wakes all of them, since messages
//     published while the connection was down are lost.
//
// The pub/sub connection is started at the first wait and run by one
// goroutine owned by the Client; a name's channel is subscribed while at
// least one waiter watches it and unsubscribed when the last one stops;
// the client's own channel, once subscribed, stays until Close.
type hub struct {
	c *Client

	mu      sync.Mutex
	chans   wakeMap // by channel; a channel with watchers is to be subscribed
	started bool
	stopped bool
	kick    chan struct{}
	stop    chan struct{}
	done    chan struct{}

	// One-at-a-time wake-ups (own == "": not used by this client).
	own     string  // this client's channel
	ownWant bool    // own is to be subscribed (a waiter watched it)
	nums    wakeMap // by waiter number
}

// wakeMap holds, for each key (a channel, a waiter number), the channel
// its watchers wait on until the key's next wake (waits) and how many
// watch it (refs); the hub's mu guards it.
type wakeMap struct {
	waits map[string]*waitSet
	refs  map[string]int
}

func newWakeMap() wakeMap {
	return wakeMap{waits: make(map[string]*waitSet), refs: make(map[string]int)}
}

type waitSet struct{ ch chan struct{} }

func newHub(c *Client) *hub {
	h := &hub{
		c:     c,
		chans: newWakeMap(),
		kick:  make(chan struct{}, 1),
		stop:  make(chan struct{}),
		done:  make(chan struct{}),
	}
	if c.wo.on {
		h.own = c.wo.channel
		h.nums = newWakeMap()
	}
	return h
}

// watch returns a channel closed at the next wake of channel ch, and a func
// to call when no longer waiting.
func (h *hub) watch(ch string) (<-chan struct{}, func()) {
	return h.watchIn(&h.chans, ch, func(first bool) {
		if first {
			h.startLocked()
		}
	}, func() { kickCh(h.kick) }) // the last watcher gone: unsubscribe
}

// watchWaiter returns a channel closed when a release picks waiter number
// num (or the client's channel is subscribed anew), and a func to call
// when no longer waiting. Only for a hub with its own channel.
func (h *hub) watchWaiter(num string) (<-chan struct{}, func()) {
	return h.watchIn(&h.nums, num, func(bool) {
		if !h.ownWant {
			h.ownWant = true
			h.startLocked()
		}
	}, nil)
}

// watchIn registers a watcher of k in m and returns k's next wake and the
// func that unregisters it (once). added runs under h.mu, told whether the
// watcher is k's first; last, if set, runs under h.mu when k's last
// watcher is gone.
func (h *hub) watchIn(m *wakeMap, k string, added func(first bool), last func()) (<-chan struct{}, func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	w := m.waits[k]
	if w == nil {
		w = &waitSet{ch: make(chan struct{})}
		m.waits[k] = w
	}
	m.refs[k]++
	added(m.refs[k] == 1)
	var once sync.Once
	return w.ch, func() {
		once.Do(func() {
			h.mu.Lock()
			defer h.mu.Unlock()
			if m.refs[k]--; m.refs[k] > 0 {
				return
			}
			delete(m.refs, k)
			if m.waits[k] == w {
				delete(m.waits, k)
			}
			if last != nil {
				last()
			}
		})
	}
}

// startLocked starts the pub/sub goroutine if needed and asks it to
// re-sync its subscriptions; h.mu is held.
func (h *hub) startLocked() {
	if h.c.o.NoPubSub || h.stopped {
		return
	}
	if !h.started {
		h.started = true
		go h.run()
	}
	kickCh(h.kick)
}

// wakeWaiter wakes waiter number num (a message on the client's channel).
func (h *hub) wakeWaiter(num string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.nums.fire(num)
}

// wakeAllWaiters wakes every waiter of the client's channel: it has just
// been (re)subscribed, and a release published while it was not may have
// picked one of them.
func (h *hub) wakeAllWaiters() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for num := range h.nums.waits {
		h.nums.fire(num)
	}
}

// wake wakes the waiters of channel ch.
func (h *hub) wake(ch string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.chans.fire(ch)
}

// fire wakes the waiters of k, if any, and forgets them: the next watch
// of k waits for the next wake. The caller holds h.mu.
func (m *wakeMap) fire(k string) {
	if w := m.waits[k]; w != nil {
		close(w.ch)
		delete(m.waits, k)
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
	// With subscriptions: go-redis subscribes again after a reconnection,
	// and the confirmation of the client's channel wakes its waiters.
	// go-redis PINGs a connection that got no message for its health
	// check interval (3s by default): a waiter's channel stays quiet until
	// a release picks it, so with thousands of waiting clients those PINGs
	// outnumbered the handoffs' requests. A PING only finds a connection
	// that fails on write, which the reading goroutine finds too; once per
	// TTL is enough, as waiters' polls cover lost wake-ups anyway.
	msgs := ps.ChannelWithSubscriptions(redis.WithChannelSize(256),
		redis.WithChannelHealthCheckInterval(h.c.o.TTL))
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
			h.deliver(m)
		case <-h.kick:
		case <-retry.C:
		}
	}
}

// deliver acts on one message of the pub/sub connection.
func (h *hub) deliver(m any) {
	switch m := m.(type) {
	case *redis.Message:
		if h.own != "" && m.Channel == h.own {
			h.wakeWaiter(m.Payload)
			return
		}
		h.wake(m.Channel)
	case *redis.Subscription:
		if h.own != "" && m.Channel == h.own && m.Kind == "subscribe" {
			h.wakeAllWaiters()
		}
	}
}

// sync subscribes the channels somebody watches and unsubscribes the
// others, each call bounded so that a dead server cannot hold the loop.
func (h *hub) sync(ps *redis.PubSub, subscribed map[string]bool) {
	h.mu.Lock()
	var add, drop []string
	if h.ownWant && !subscribed[h.own] {
		add = append(add, h.own)
	}
	for ch := range h.chans.refs {
		if !subscribed[ch] {
			add = append(add, ch)
		}
	}
	for ch := range subscribed {
		if h.chans.refs[ch] == 0 && ch != h.own {
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
