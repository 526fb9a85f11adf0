package redlock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/engine"
	"github.com/baton-go/baton/engine/leasekit"
	"github.com/baton-go/baton/engine/leasekit/keeper"
	"github.com/baton-go/baton/internal/rediseval"
	"github.com/redis/go-redis/v9"
)

// mutex is an exclusive lock held on a majority of the nodes, behind the
// *baton.Mutex a Redlock client returns. It implements baton.Locker.
// Locking it again with a context derived from one of its own leases
// re-enters (see the baton package doc).
//
// Redlock has only the mutex: a read/write lock or a semaphore would need
// the quorum token's argument for several holders at once, which it does
// not give. Nor has it LockFor: every key is written with the TTL.
type mutex struct{ m *leasekit.Mutex }

var _ baton.Locker = (*mutex)(nil)

// mutex returns the exclusive lock called name. An invalid name fails with
// an error wrapping baton.ErrInvalidName.
func (c *Client) mutex(name string) (*mutex, error) {
	m, err := c.eng.Mutex(name)
	if err != nil {
		return nil, err
	}
	return &mutex{m}, nil
}

// Name returns the normalised lock name.
func (m *mutex) Name() string { return m.m.Name() }

// Lock blocks until the lock is granted or ctx ends. Between attempts it
// waits for a release to wake it, polling as a safety net (see
// wakeone.go); after an attempt that split the vote or could not reach
// the nodes it sleeps a jittered backoff step. A waiter that reaches no
// majority of the nodes for as long as a held lease would survive fails
// with an error wrapping baton.ErrSessionLost and baton.ErrUnavailable.
func (m *mutex) Lock(ctx context.Context) (*baton.Lease, error) { return m.m.Lock(ctx) }

// TryLock makes one attempt; baton.ErrNotAcquired when other owners hold
// enough nodes that no majority is left.
func (m *mutex) TryLock(ctx context.Context) (*baton.Lease, error) { return m.m.TryLock(ctx) }

// outcome is how one attempt ended.
type outcome int

const (
	granted   outcome = iota
	held              // other owners hold enough nodes: no majority possible
	unreached         // too few nodes answered (or the write-back fell short)
)

// attemptResult is one attempt's outcome.
type attemptResult struct {
	outcome outcome
	token   uint64    // quorum token (without TokenFloor), when granted
	start   time.Time // send time of the first request
	err     error     // why not granted (unreached), for messages
	// majorityAnswered: a majority of the nodes answered the acquire
	// round (granted or held), so they are reachable.
	majorityAnswered bool
	// waiters is the largest waiters' count a node answered (recording
	// attempts only; see wakeone.go).
	waiters int64
}

// attempts are one Mutex acquire's attempts for package leasekit: each
// verifies the node indexes until that has succeeded once, then runs one
// Redlock attempt under a new owner. An attempt that fails frees what it
// took itself (see attempt). A waiting acquire keeps one waiter id for
// all of its attempts, so its intent keeps its place; the first attempt
// records nothing and watches nothing, so an uncontended acquire leaves
// no trace and costs no SUBSCRIBE, and a refused first attempt is
// followed at once by one that records the intent, after the wake-up is
// watched, so that a release in between is not missed.
type attempts struct {
	c     *Client
	b     *bound // the mutex's keys
	wait  bool
	w     waiting // the waiter, when waiting
	num   string  // the hub's key
	tried bool    // an attempt recorded the intent
	// refused: an attempt found the lock held. Only then does the
	// acquire watch for a release and record its intent: an acquire that
	// cannot reach the nodes starts no listener that would outlive it.
	refused bool
	// watched is the wake-up of the attempt before; woken, that a
	// release's message for this waiter fired it before this attempt (a
	// resubscription's wake of every waiter does not count: it would
	// double a herd's attempts).
	watched <-chan struct{}
	woken   bool
	// waiters is the waiters' count the last refusal answered (0: none
	// known), which spaces the retries of attempts the nodes did not
	// answer (see Try).
	waiters int64
}

// waiting is how an attempt records its waiter (see wakeone.go).
type waiting struct {
	id      string // "<client id>.<num>"; "" for an acquire that does not wait
	arrival int64  // the acquire's start, ms since the epoch: its place
	record  bool   // record the waiter where the lock is held
}

// Begin starts one acquire. Redlock serves only the mutex.
func (s *store) Begin(req *leasekit.Request) leasekit.Attempts {
	if req.Kind != leasekit.KindMutex || req.Fixed > 0 {
		panic("redlock: only the renewed mutex is served") // the Client hands out nothing else
	}
	b, _ := req.Bound.(*bound)
	if b == nil {
		b = s.c.bind(req.Name)
	}
	a := &attempts{c: s.c, b: b, wait: req.Wait}
	if req.Wait {
		a.w.id, a.num = s.c.wo.Next()
		a.w.arrival = time.Now().UnixMilli()
	}
	return a
}

// Watch watches the waiter's wake-up from the attempt after one that
// found the lock held on.
func (a *attempts) Watch(n int) (<-chan struct{}, func()) {
	if !a.wait || n == 0 || !a.refused {
		return nil, func() {}
	}
	a.woken = false
	if a.watched != nil {
		select {
		case <-a.watched:
			a.woken = a.c.hub.picked(a.num)
		default:
		}
	}
	ch, unwatch := a.c.hub.watchWaiter(a.num)
	a.watched = ch
	return ch, unwatch
}

var _ leasekit.Store = (*store)(nil)

func (a *attempts) Try(ctx context.Context, n int) (leasekit.Result, error) {
	if err := a.c.verifyFirst(ctx); err != nil {
		if errors.Is(err, baton.ErrInvalidOption) {
			return leasekit.Result{}, leasekit.Permanent(err)
		}
		return leasekit.Result{}, fmt.Errorf("verifying the node indexes: %w", err)
	}
	a.w.record = a.wait && n > 0 && a.refused
	a.tried = a.tried || a.w.record
	owner := engine.NewOwnerID()
	if a.tried {
		// This attempt or an earlier one may have recorded the waiter:
		// the release of its grant removes the waiter wherever a node
		// still lists it (see releaseScript). Nothing lists a waiter
		// that never recorded itself, and its grant's release skips
		// those two ZREMs on every node.
		owner = a.w.id + "/" + owner
	}
	r := a.c.attempt(ctx, a.b, owner, a.w)
	res := leasekit.Result{Sent: r.start, Ref: keeper.Ref{Key: a.b.name, Owner: owner, Aux: a.b}}
	switch r.outcome {
	case granted:
		res.Granted, res.Token = true, r.token
		res.Ref.Aux = &grant{b: a.b, token: r.token}
		return res, nil
	case held:
		a.refused = true
		res.Again = n == 0
		// A woken waiter that finds the lock held retries at its
		// backoff step: its attempt may have reached nodes before the
		// release did, and they hand the lock to no one else.
		if a.w.record && !a.woken {
			res.Poll = a.c.pollFloor(r.waiters)
		}
		if a.w.record {
			a.waiters = r.waiters
		}
		return res, nil
	}
	if r.majorityAnswered {
		res.Reached = r.start
	} else {
		res.Poll = a.c.retryFloor(a.waiters)
	}
	if errors.Is(r.err, ErrBadCounter) {
		// Retrying cannot help until an operator repairs the counters.
		return res, leasekit.Permanent(r.err)
	}
	return res, r.err
}

func (a *attempts) Forget(leasekit.Result) {}

// End removes the intents of a waiter that gave up (see unwait).
func (a *attempts) End(_ context.Context, granted bool) {
	if a.tried && !granted {
		a.c.unwait(a.b.name, a.w.id)
	}
}

// verifyFirst runs Verify until it has succeeded once, bounded by the
// acquire budget.
func (c *Client) verifyFirst(ctx context.Context) error {
	c.verifyMu.Lock()
	done := c.verified
	c.verifyMu.Unlock()
	if done {
		return nil
	}
	vctx, cancel := context.WithTimeout(ctx, c.o.acquireBudget())
	defer cancel()
	return c.Verify(vctx) // Close interrupts its fan (see fanOut)
}

// attempt is one Redlock acquire: both rounds within 0.8·TTL, the lock
// unlocked on every node it may have reached when it fails.
func (c *Client) attempt(ctx context.Context, b *bound, owner string, w waiting) attemptResult {
	c.attempts.Add(1)
	start := time.Now()
	// Close interrupts both rounds: each fan hooks it (see fanOut).
	actx, cancel := context.WithTimeout(ctx, c.o.acquireBudget())
	defer cancel()

	r, rd := c.acquireRound(actx, b, owner, w)
	r.start = start
	if r.outcome == granted {
		r = c.writeBack(actx, b, rd.owned, rd.tokens, r)
	}
	if r.outcome == granted {
		// Validity after the write-back, on the monotonic clock: what is
		// left of the TTL the earliest node started counting no earlier
		// than start, minus the drift allowance.
		if validity := c.o.TTL - time.Since(start) - c.drift; validity <= 0 {
			r = attemptResult{outcome: unreached, start: start, majorityAnswered: true,
				err: fmt.Errorf("granted too late: %v after the first request, validity %v", time.Since(start).Round(time.Millisecond), validity.Round(time.Millisecond))}
		} else {
			// Nodes that answer after the round stopped may still grant:
			// the keeper extends and releases the key on every node, once
			// they answered (see late.go).
			c.settleLate(owner, start, rd)
			return r
		}
	}
	c.cleanUp(ctx, b, owner, w, start, rd)
	return r
}

// cleanUp frees what a failed attempt may hold: the granting nodes are
// unlocked at once, owner-checked; nodes whose outcome is unknown, or
// still to come, are left to the keeper, which unlocks every node.
func (c *Client) cleanUp(ctx context.Context, b *bound, owner string, w waiting, start time.Time, rd round) {
	ref := keeper.Ref{Key: b.name, Owner: owner, Aux: b}
	switch {
	case ctx.Err() != nil || c.checkOpen() != nil:
		// The caller must return now: the keeper unlocks every node.
		rd.f.cancel()
		c.k.Abandon(ref)
		return
	case len(rd.unknown) > 0:
		c.k.Abandon(ref)
	}
	if len(rd.tokens) > 0 {
		c.unlock(ctx, b, owner, w, rd.granting())
	}
	if rd.f.pending() == 0 {
		rd.f.cancel()
		return
	}
	// Requests still in flight may create the key later (after an unlock
	// sent now on another connection): once they answered, the keeper
	// unlocks every node if one of them granted or failed.
	c.afterRound(start, rd, func(late []result) {
		for _, res := range late {
			if vs, _ := res.v.([]any); res.err != nil || len(vs) == 2 && vs[0] == int64(codeGranted) {
				c.k.Abandon(ref)
				return
			}
		}
		if rd.f.pending() > 0 {
			c.k.Abandon(ref)
		}
	})
}

// round is what an acquire round learnt.
type round struct {
	tokens  []vote // granting nodes and the tokens they minted
	unknown []int  // nodes that failed: the script may have run
	f       *fan   // the answers the round did not wait for
	owned   any    // the attempt's owner, boxed once for every request
}

// vote is one node's grant: the token it minted.
type vote struct {
	node  int
	token uint64
}

// granting lists the granting nodes.
func (rd round) granting() []int {
	out := make([]int, 0, len(rd.tokens))
	for _, v := range rd.tokens {
		out = append(out, v.node)
	}
	return out
}

// acquireRound sends the acquire script to every usable node at once,
// each with NodeTimeout, and stops as soon as a majority granted or a
// majority has become impossible: waiting for slow nodes would only eat
// into the grant's validity. It returns the tokens of the granting nodes
// and how many nodes may hold the key (granted, or outcome unknown).
func (c *Client) acquireRound(ctx context.Context, b *bound, owner string, w waiting) (attemptResult, round) {
	var owned, waiterArg, recArg, arrival any = owner, w.id, flag(w.record), w.arrival // boxed once for every node
	idx := c.usable()
	c.nodeRequests.Add(uint64(len(idx)))
	f := c.fanOut(ctx, idx, c.o.NodeTimeout, func(ctx context.Context, n *node) (any, error) {
		init := flag(!n.known.Load())
		return rediseval.Run(ctx, n.rdb, evAcquire, b.acq, b.acqB, owned, c.ttlArg, n.i, len(c.nodes), init, waiterArg, recArg, c.ttlArg, arrival, c.procArg).Result()
	})
	t := tally{tokens: make([]vote, 0, len(c.nodes)), failed: len(c.nodes) - len(idx)}
	for len(t.tokens) < c.maj && len(c.nodes)-t.heldBy-t.failed >= c.maj {
		r, more := f.next()
		if !more {
			break
		}
		c.count(&t, r)
	}
	t.pending = f.pending()
	// Nodes that had not answered when the round stopped may still grant:
	// they are unlocked with the rest when the attempt fails, and
	// extended with the rest when it succeeds.
	res := c.outcome(&t)
	res.waiters = t.waiters
	return res, round{tokens: t.tokens, unknown: t.unknown, f: f, owned: owned}
}

// tally is what an acquire round has heard so far.
type tally struct {
	tokens  []vote // granting nodes and the tokens they minted (a node answers once)
	heldBy  int    // nodes held by other owners
	failed  int    // nodes that cannot grant (errors, refusals)
	unknown []int  // nodes that failed: the script may have run
	errs    []error
	waiters int64 // the largest waiters' count a held node answered
	pending int   // nodes that had not answered when the round stopped
}

// The acquire script's flags, boxed once (a string boxed at run time is
// an allocation per node).
var argFalse, argTrue any = "0", "1"

// flag is b as the scripts' "0" or "1".
func flag(b bool) any {
	if b {
		return argTrue
	}
	return argFalse
}

// count adds one node's answer to t.
func (c *Client) count(t *tally, r result) {
	if r.err != nil {
		// A timeout or a broken connection: the script may have run.
		t.failed++
		t.unknown = append(t.unknown, r.i)
		t.errs = append(t.errs, r.err)
		return
	}
	vs, _ := r.v.([]any)
	code := int64(-99)
	if len(vs) == 2 || len(vs) == 3 && vs[0] == int64(codeHeld) {
		code, _ = vs[0].(int64)
	}
	switch code {
	case codeGranted:
		c.nodes[r.i].known.Store(true)
		t.tokens = append(t.tokens, vote{node: r.i, token: num(vs[1])})
	case codeHeld:
		c.nodes[r.i].known.Store(true)
		t.heldBy++
		if len(vs) == 3 {
			w, _ := vs[2].(int64)
			t.waiters = max(t.waiters, w)
		}
	case codeNoIndex:
		c.nodes[r.i].refused.Store(true)
		c.wiped.Add(1)
		t.failed++
		t.errs = append(t.errs, fmt.Errorf("node %d (%s): %w; refused from now on", r.i, c.nodes[r.i].addr, ErrNodeWiped))
	case codeWrongIndex:
		t.failed++
		t.errs = append(t.errs, c.checkIndex(r.i, vs[1]))
	case codeBadCounter:
		c.nodes[r.i].known.Store(true)
		t.failed++
		t.errs = append(t.errs, fmt.Errorf("node %d (%s): %w: %s holds %v", r.i, c.nodes[r.i].addr, ErrBadCounter, c.keyCtr, vs[1]))
	default:
		t.failed++
		t.errs = append(t.errs, fmt.Errorf("node %d (%s): unexpected reply %v", r.i, c.nodes[r.i].addr, r.v))
	}
}

// outcome judges a finished round.
func (c *Client) outcome(t *tally) attemptResult {
	res := attemptResult{majorityAnswered: len(t.tokens)+t.heldBy >= c.maj}
	switch {
	case len(t.tokens) >= c.maj:
		res.outcome = granted
	case t.heldBy > len(c.nodes)-c.maj:
		res.outcome = held
		res.err = fmt.Errorf("%d of %d nodes held by other owners", t.heldBy, len(c.nodes))
	default:
		res.outcome = unreached
		if t.pending > 0 {
			t.errs = append(t.errs, fmt.Errorf("%d node(s) did not answer in time", t.pending))
		}
		res.err = fmt.Errorf("%d of %d nodes granted, %d held by others, want %d: %w", len(t.tokens), len(c.nodes), t.heldBy, c.maj, errors.Join(t.errs...))
	}
	if err, _ := c.broken.Load().(error); err != nil {
		res.outcome, res.err = unreached, err
	}
	return res
}

// writeBack makes sure that a majority of the nodes will mint above the
// quorum token t before the grant returns: then any later grant takes one
// of them after this key left it, and mints a larger token there (see the
// package doc). A granting node k that minted v > t − N needs nothing: its
// next mint is at least v + N > t, and v was minted in the step that
// created this key. That holds for every granting node in the steady
// state, where every attempt reaches every node and the counters move up
// together, so no request is sent. Only when fewer than a majority of the
// granting nodes are that close (a node that missed grants, or one whose
// counter an operator raised) does it raise the lagging ones, only while
// this attempt's key is still present there, to at least t.
func (c *Client) writeBack(ctx context.Context, b *bound, owned any, tokens []vote, r attemptResult) attemptResult {
	var t uint64
	minter := -1
	for _, v := range tokens {
		if v.token > t {
			t, minter = v.token, v.node
		}
	}
	r.token = t
	lags := func(v vote) bool { return v.token+uint64(len(c.nodes)) <= t }
	near := 0 // granting nodes whose next mint is above t
	for _, v := range tokens {
		if !lags(v) {
			near++
		}
	}
	need := c.maj - near // raises of lagging nodes still needed
	if need <= 0 {
		return r
	}
	targets := make([]int, 0, len(tokens))
	for _, v := range tokens {
		if lags(v) {
			targets = append(targets, v.node)
		}
	}
	if c.hooks.writeBack != nil {
		if targets = c.hooks.writeBack(append(targets, minter), minter); len(targets) == 0 {
			return r // a control keeps the grant without a write-back
		}
	}
	var tok any = t // boxed once for every node
	c.writeBacks.Add(uint64(len(targets)))
	f := c.fanOut(ctx, targets, c.o.NodeTimeout, func(ctx context.Context, n *node) (any, error) {
		return rediseval.Run(ctx, n.rdb, evRaise, b.raise, b.raiseB, owned, tok, n.i, len(c.nodes)).Int64()
	})
	defer f.cancel()
	raised := 0
	var errs []error
	for raised < need {
		res, more := f.next()
		if !more {
			break
		}
		switch {
		case res.err != nil:
			errs = append(errs, res.err)
		case res.v == int64(1):
			raised++
		default:
			errs = append(errs, fmt.Errorf("node %d (%s): the key left before the write-back", res.i, c.nodes[res.i].addr))
		}
	}
	if c.hooks.writeBack != nil {
		raised = need // a control keeps the grant whatever its write-back did
	}
	if raised < need {
		return attemptResult{outcome: unreached, start: r.start, majorityAnswered: true,
			err: writeBackErr(raised+near, len(tokens), c.maj, errs)}
	}
	return r
}

// unlock frees a failed attempt's key on the nodes idx that granted it,
// owner-checked, before the attempt returns, so that a split vote frees
// the nodes for the next attempt at once, and records a waiter there as
// the nodes that refused it did (see unlockScript). What it cannot
// confirm within NodeTimeout is queued on the keeper, which retries in
// the background until the key must have expired. It wakes nobody: the
// lock was never held by a majority, and the attempts that split it
// retry at their backoff step.
func (c *Client) unlock(ctx context.Context, b *bound, owner string, w waiting, idx []int) {
	ref := keeper.Ref{Key: b.name, Owner: owner, Aux: b}
	c.unlocks.Add(uint64(len(idx)))
	var waiter any = ""
	if w.record {
		waiter = w.id
	}
	f := c.fanOut(ctx, idx, c.o.NodeTimeout, func(ctx context.Context, n *node) (any, error) {
		return rediseval.Run(ctx, n.rdb, evUnlock, b.three, b.threeB, owner, waiter, w.arrival, c.ttlArg).Result()
	})
	defer f.cancel()
	for {
		r, more := f.next()
		if !more {
			break
		}
		if r.err != nil {
			c.k.Abandon(ref)
			return
		}
	}
	if f.pending() > 0 {
		c.k.Abandon(ref)
	}
}

// writeBackErr is the error of a write-back after which fewer than a
// majority of nodes will mint above the token: held counts the nodes that
// minted close to it (the minter included) and the nodes raised. Nodes
// that did not answer before the attempt's bound leave no error of their
// own, so errs may be empty.
func writeBackErr(held, granting, majority int, errs []error) error {
	err := fmt.Errorf("write-back: %d of %d granting nodes will mint above the token (its minter included), want %d", held, granting, majority)
	if len(errs) == 0 {
		return fmt.Errorf("%w (the others did not answer in time)", err)
	}
	return fmt.Errorf("%w: %w", err, errors.Join(errs...))
}

// unwait removes, in the background (the caller's context may be over),
// the intents of a waiter that gave up, on every node: a release would
// otherwise pick it, and its client, still subscribed, would swallow the
// wake-up, leaving the lock to the other waiters' polls. An intent expires
// by itself one TTL after it was recorded anyway, so a node that does not
// answer (or a late attempt that records it again) costs at most that.
// The goroutine is tracked like a node request.
func (c *Client) unwait(name, waiter string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	c.calls.Add(1)
	go func() {
		defer c.calls.Done()
		ctx, cancel := context.WithTimeout(c.ctx, c.o.NodeTimeout)
		defer cancel()
		w, e := c.waitersKey(name), c.intentsKey(name)
		f := c.fanOut(ctx, nil, c.o.NodeTimeout, func(ctx context.Context, n *node) (any, error) {
			return n.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
				p.ZRem(ctx, w, waiter)
				p.ZRem(ctx, e, waiter)
				return nil
			})
		})
		defer f.cancel()
		for _, more := f.next(); more; _, more = f.next() {
		}
	}()
}
