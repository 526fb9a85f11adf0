package redlock

import (
	"context"
	"sync"
	"time"

	"github.com/baton-go/baton/engine/leasekit/keeper"
)

// A granted attempt returns as soon as a majority granted, and the nodes
// that had not answered yet may grant it too a moment later. Their
// requests are left to finish, not cancelled: a cancelled request closes
// its connection, and the script may still run on the node after the
// grant's release, sent on another connection, reached it first. That
// key, a grant already released, then held the node for a whole TTL: on
// a loaded host, 500 lock+unlock left two of five nodes held, and every
// later acquire needed all three others.
//
// So the release of a grant waits until its acquire requests have all
// answered (or reached their NodeTimeout; a node that has not answered by
// then is one whose key expires by its TTL, as a node that does not
// answer the release). Client.late tracks them by owner.

// afterRound lets rd's unanswered requests finish on a goroutine of the
// client (a worker of its pool), at most NodeTimeout from start, and hands their answers to
// then. The fan's own requests still count in calls, so the count is
// above zero here and Close's Wait may not have returned.
func (c *Client) afterRound(start time.Time, rd round, then func(late []result)) {
	c.calls.Add(1)
	c.pool.Go(func() {
		defer c.calls.Done()
		defer rd.f.cancel()
		then(rd.f.drain(start.Add(c.o.NodeTimeout), true))
	})
}

// settleLate has a granted attempt's unanswered requests finish, and
// owner's release wait for them.
func (c *Client) settleLate(owner string, start time.Time, rd round) {
	if rd.f.pending() == 0 {
		rd.f.cancel()
		return
	}
	done := make(chan struct{})
	c.mu.Lock()
	c.late[owner] = done
	c.mu.Unlock()
	// afterRound's work, in one goroutine without a callback: what it
	// drains is not read.
	c.calls.Add(1)
	c.pool.Go(func() {
		defer c.calls.Done()
		defer rd.f.cancel()
		rd.f.drain(start.Add(c.o.NodeTimeout), false)
		c.mu.Lock()
		delete(c.late, owner)
		c.mu.Unlock()
		close(done)
	})
}

// awaitLate waits until the acquire requests of refs have all answered,
// or ctx ends.
func (c *Client) awaitLate(ctx context.Context, refs []keeper.Ref) {
	for _, r := range refs {
		c.mu.Lock()
		done := c.late[r.Owner]
		c.mu.Unlock()
		if done == nil {
			continue
		}
		select {
		case <-done:
		case <-ctx.Done():
			return
		}
	}
}

// timers are stopped timers for reuse: a release's grace and a round's
// drain each waited on a timer of their own, two allocations of every
// lock+unlock. Since Go 1.23 a stopped timer delivers nothing stale, so
// one taken from here is as good as a new one.
var timers = sync.Pool{New: func() any {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return t
}}

// newTimer is a timer that fires after d, from timers; putTimer stops it
// and gives it back.
func newTimer(d time.Duration) *time.Timer {
	t := timers.Get().(*time.Timer)
	t.Reset(d)
	return t
}

func putTimer(t *time.Timer) {
	t.Stop()
	timers.Put(t)
}
