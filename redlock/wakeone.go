package redlock

import (
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/baton-go/baton/engine"
	"github.com/baton-go/baton/engine/leasekit"
)

// One waiter per release, as in package redislock: a release wakes the
// first waiter instead of leaving every waiter to its
// backoff, so a handoff costs the same few requests with 5 waiters or
// 2 000, and waiters poll only as a safety net, spaced by their number.
//
// A waiting Lock has the id "<client id>.<n>", the client's id being
// "<random>-<l>": l is the node the client listens on, picked at random
// per client (one pub/sub connection per client, not one per node: with
// thousands of clients in a process, N per client exhausted the file
// descriptors and stalled the nodes' accept queues). From its second
// attempt on, each attempt records the id on every node that answers
// "held", in the name's waiters set, scored by the waiter's arrival (its
// clock when the acquire began: the same score on every node, so every
// node sees the same first waiter), and in its intents set, scored by the
// intent's expiry one TTL after the attempt on the node's clock; it
// learns the number of waiters.
//
// Each node's release of a key removes the first live waiter; node l
// publishes its number on its client's channel "<prefix>wake:<client id>",
// and the client's hub (hub.go) wakes that waiter, which attempts on all
// nodes as usual. A waiter keeps its place: a woken waiter that finds the
// lock taken is the next one handed it. If its attempt reached nodes
// before their release did, it finds the lock held there; a woken waiter
// that is refused therefore retries at its backoff step, not at its poll.
//
// Every node must keep the same line, or a release picks different first
// waiters on different nodes and the node a waiter listens on picks
// someone else. So an attempt that took some nodes and freed them records
// its waiter there as the refusing nodes did (unlockScript), and a
// waiter's grant, whose owner is "<waiter id>/<random>", removes that
// waiter at its release wherever a node still lists it (releaseScript).
//
// Wake-ups are hints; a free lock admits any caller. What a lost one
// costs is a poll: a message published before the client's SUBSCRIBE
// landed, or lost with the connection (a resubscription wakes all of the
// client's waiters); node l down, or held by another owner at the
// release, so that no node tells the first waiter (the others only remove
// it); a first waiter whose client is gone is skipped by node l alone
// (PUBLISH reached nobody), so the next waiter is told only if it listens
// on the same node. Every release of a node where the lock is then free
// takes part, the holder's own key or not, so a grant that never reached
// node l still hands over there.
//
// A refused attempt's poll comes no sooner than leasekit.PollFloor of the
// largest number of waiters a node answered: the waiters of one lock
// together poll about once per Backoff.Max/2 whatever their number,
// capped at TTL/2 so that an intent never expires between polls and a
// waiter still finds out within a TTL that it cannot reach a majority. An
// attempt that fails without a majority of "held" answers retries at its
// backoff step when a majority answered (a split vote: the lock may be
// free), and no sooner than retryFloor when a majority did not answer at
// all (slow or unreachable nodes) and the waiter knows of other waiters.
type wakeOne struct {
	leasekit.Waiters        // ID: the client's id, "<random>-<listen>", the first part of its waiters' ids
	channel          string // the client's channel
	rootArg          any    // the channels' root, the release script's ARGV[1], boxed once
	listen           int    // the node whose messages the client listens to
}

// init sets w up for a client with options o (validated).
func (w *wakeOne) init(o Options, nodes int) {
	root := o.Prefix + "wake:"
	w.rootArg = root
	w.listen = rand.IntN(nodes)
	w.ID = engine.NewOwnerID() + "-" + strconv.Itoa(w.listen)
	w.channel = root + w.ID
}

// pollFloor is the least time before the next poll of one of n waiters.
func (c *Client) pollFloor(n int64) time.Duration {
	return leasekit.PollFloor(n, c.o.Backoff, c.o.TTL)
}

// retryFloor is the least time before a waiter that knows of n waiters
// retries an attempt a majority of the nodes did not answer: a poll's
// floor, capped at TTL/10. Overloaded nodes answer late, the attempts of
// every waiter fail at once, and retried at the backoff step (at most
// Backoff.Max apart) 2 000 waiters sent fifteen times their polls'
// requests: the nodes fell further behind, and the waiters, with no
// successful attempt for a TTL, failed with ErrSessionLost. Capped at
// TTL/10, a waiter still makes several attempts before that, and a
// release's wake-up still cuts the wait short.
func (c *Client) retryFloor(n int64) time.Duration {
	return leasekit.PollFloor(n, c.o.Backoff, c.o.TTL/5)
}

// waitersKey is the waiters set of lock name on every node (by arrival);
// intentsKey holds the same waiters by expiry.
func (c *Client) waitersKey(name string) string { return c.o.Prefix + "waiters:" + name }
func (c *Client) intentsKey(name string) string { return c.o.Prefix + "intents:" + name }
