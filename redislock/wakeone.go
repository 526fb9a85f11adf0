package redislock

import (
	"time"

	"github.com/baton-go/baton/engine"
	"github.com/baton-go/baton/engine/leasekit"
	"github.com/redis/go-redis/v9"
)

// One waiter per release (the mutex and the election; see "Waiting" in
// the package doc). A release wakes the oldest waiting intent instead of
// every waiter of the name, so a handoff costs the same few requests with
// 5 waiters or 2 000, and waiters poll only as a safety net, spaced by
// their number.
//
// A waiter that can be woken alone has the id "<client id>.<n>": the
// client's random id and a number of the client's own. Its client
// subscribes, once, to its own channel "<prefix>:wake:<client id>"; the
// release script removes the chosen intent and publishes n there, and the
// client's hub wakes that waiter only. The hub wakes all of its waiters
// when that channel is (re)subscribed, since a release published while it
// was not may have chosen one of them.
//
// A free lock admits any caller, not only the woken waiter: TryLock and a
// first attempt keep their meaning ("a lease engine grants any waiter"),
// and a woken waiter that died, or whose message was lost, never holds the
// lock up. Reserving the lock for the woken waiter for a window would make
// handoffs fair, but every lost wake-up would then stall the lock for the
// whole window. The price of not reserving: a woken waiter can find the
// lock taken by a caller that came first; it records its intent again (at
// the back, since intents are ordered by expiry) and waits for another
// wake-up.
//
// Polls are the safety net for a lost wake-up (pub/sub is best-effort,
// though a connection that comes back wakes all of its client's waiters):
// a waiter's refused attempt learns the number of waiters n, and its next
// poll comes no sooner than n × Backoff.Max/2 (jittered over its upper
// half, and at least the backoff step), so that the waiters of one lock
// together poll about once per Backoff.Max/2 whatever their number (a
// lone waiter keeps its backoff), and a lock left free by a lost wake-up
// is found about that soon: what a lost message cost a lone waiter before.
// The interval is capped at TTL/2: an intent expires one TTL after the
// attempt that recorded it, and a waiter that cannot reach the server must
// still notice it within a TTL (baton.ErrSessionLost). Past TTL/Backoff.Max
// waiters (7 with the defaults) the cap rules, and their polls grow with
// their number again: n per TTL/2 or so, near the least that keeps their
// intents alive.
//
// Clients without pub/sub (Options.NoPubSub), and clients on a
// redis.Ring, whose SUBSCRIBE goes to the shard of the channel's name
// rather than the lock's, keep plain waiter ids and the name's channel;
// the release script skips their intents, so they wake by their own
// backoff and by releases of their own client.
type wakeOne struct {
	on               bool   // this client's mutex and election waiters are woken one at a time
	wakes            bool   // this client's releases wake other clients' waiters one at a time
	leasekit.Waiters        // ID: the client's id, the first part of its waiters' ids
	channel          string // the client's channel: root + id
	rootArg          any    // the release script's ARGV[5], boxed once
	countOK          any    // ARGV[6]: "1" when PUBLISH counts every subscriber (not a Cluster)
}

// init sets w up for a client of rdb with options o (validated).
func (w *wakeOne) init(rdb redis.UniversalClient, o Options) {
	root := o.Prefix + ":wake:"
	w.rootArg, w.countOK, w.wakes = root, "1", true
	if _, ok := rdb.(*redis.ClusterClient); ok {
		w.countOK = "0"
	}
	if _, ring := rdb.(*redis.Ring); ring {
		w.rootArg, w.wakes = "", false // nor does its release wake anyone alone
		return
	}
	if o.NoPubSub {
		return // its releases still wake other clients' waiters
	}
	w.on = true
	w.ID = engine.NewOwnerID()
	w.channel = root + w.ID
}

// pollFloor is the least time before the next poll of one of n waiters
// (see above and leasekit.PollFloor).
func (c *Client) pollFloor(n int64) time.Duration {
	return leasekit.PollFloor(n, c.o.Backoff, c.o.TTL)
}
