package redlock

import (
	"context"
	"errors"
	"fmt"
	"github.com/baton-go/baton/internal/rediseval"
	"time"

	"github.com/baton-go/baton/engine/leasekit/keeper"
)

// store is the keeper.Store of a Client: a batch is one script per node,
// sent to every node at once; a lease counts as renewed only when a
// majority of the nodes extended it.
type store struct{ c *Client }

var _ keeper.Store = (*store)(nil)

func (s *store) BatchSize() int { return s.c.o.BatchSize }

// keysOwners lists the lock keys and owners of refs.
func (s *store) keysOwners(refs []keeper.Ref) ([]string, []any) {
	keys := make([]string, len(refs))
	owners := make([]any, len(refs))
	for i, r := range refs {
		keys[i], owners[i] = s.c.lockKey(r.Key), r.Owner
	}
	return keys, owners
}

// timeout is a background round's per-node bound. The keeper's context
// carries no deadline: the keeper ends it on its own clock, once a slow
// answer is no longer worth having (the batch's deadline), and a renewal
// answered after a TTL is moot. A round cut at TTL/3 instead threw away
// answers the keeper still took: through a link of 240 ms each way a
// node's first request on a new connection (dial, HELLO, the script) took
// 700-780 ms, past the cut, although every node had extended the key,
// and the next round, on connections still busy with the abandoned ones,
// was cut too: a false Lost at a latency well within the budget.
func (s *store) timeout(ctx context.Context) time.Duration {
	if d, ok := ctx.Deadline(); ok {
		return time.Until(d)
	}
	return s.c.o.TTL
}

// Renew extends every ref on every node where it still holds its owner
// (PEXPIRE, which never re-creates an expired key). refs[i] is renewed
// when a majority extended it, definitely not when too few nodes can
// still have it; when the unanswered nodes could decide either way, the
// whole batch's outcome is unknown (an error): the keeper retries, and
// declares the lease Lost at its deadline if no majority ever confirms.
func (s *store) Renew(ctx context.Context, refs []keeper.Ref, ttl time.Duration) ([]bool, error) {
	c := s.c
	keys, owners := s.keysOwners(refs)
	args := append([]any{ttl.Milliseconds()}, owners...)
	for _, r := range refs {
		_, tok := boundOf(r.Aux)
		args = append(args, tok)
	}
	f := c.fanOut(ctx, nil, s.timeout(ctx), func(ctx context.Context, n *node) (any, error) {
		// EVAL, not EVALSHA: one round trip also on a node whose script
		// cache is empty (restarted, failed over, SCRIPT FLUSH), where
		// EVALSHA's NOSCRIPT and the EVAL after it took two. A node that
		// answers at 0.4 TTL then answered the first renewal after its
		// restart at 0.8 TTL, past the lease's deadline: the lease was
		// Lost though every node extended it. The script's text is sent
		// once per batch, every TTL/3.
		return renewScript.Eval(ctx, n.rdb, keys, args...).Int64Slice()
	})
	defer f.cancel()
	ext := make([]int, len(refs))
	answered := 0
	var errs []error
	// decided: every ref is renewed or can no longer be; a slow or dead
	// node is then not waited for.
	decided := func() bool {
		unknown := len(c.nodes) - answered
		for _, e := range ext {
			if e < c.maj && e+unknown >= c.maj {
				return false
			}
		}
		return true
	}
	for !decided() {
		r, more := f.next()
		if !more {
			break
		}
		vs, _ := r.v.([]int64)
		if r.err == nil && len(vs) != len(refs) {
			r.err = fmt.Errorf("node %d: %d results for %d keys", r.i, len(vs), len(refs))
		}
		if r.err != nil {
			errs = append(errs, r.err)
			continue
		}
		answered++
		for k, v := range vs {
			if v == 1 {
				ext[k]++
			}
		}
	}
	unknown := len(c.nodes) - answered
	renewed := make([]bool, len(refs))
	for k, e := range ext {
		switch {
		case e >= c.maj:
			renewed[k] = true
		case e+unknown >= c.maj:
			return nil, fmt.Errorf("redlock: renew: %d of %d nodes answered: %w", answered, len(c.nodes), errors.Join(errs...))
		}
	}
	return renewed, nil
}

// releaseCall is the release script's call on one node for refs. One
// ref of a Mutex (the usual release, a lease at a time) sends the keys
// the Mutex bound, and its arguments without a list of their own.
func (s *store) releaseCall(refs []keeper.Ref) func(ctx context.Context, n *node) (any, error) {
	c := s.c
	if b, _ := boundOf(refs[0].Aux); len(refs) == 1 && b != nil {
		var owner any = refs[0].Owner // boxed once for every node
		return func(ctx context.Context, n *node) (any, error) {
			return rediseval.Run(ctx, n.rdb, evRelease, b.three, b.threeB, c.wo.rootArg, n.i, owner).Result()
		}
	}
	keys, owners := s.keysOwners(refs)
	for _, r := range refs {
		keys = append(keys, c.waitersKey(r.Key))
	}
	for _, r := range refs {
		keys = append(keys, c.intentsKey(r.Key))
	}
	boxed := rediseval.BoxKeys(keys)
	return func(ctx context.Context, n *node) (any, error) {
		args := append([]any{c.wo.rootArg, n.i}, owners...)
		return rediseval.Run(ctx, n.rdb, evRelease, keys, boxed, args...).Result()
	}
}

// Release deletes every ref on every node where it still holds its owner.
// Each deleted key wakes one waiter of its name (see wakeone.go).
// It succeeds when a majority of the nodes confirmed: the lock is then
// free for the next majority, and a key left on a node that did not
// answer expires by its TTL. With fewer answers the outcome is unknown
// and the keeper (or the lease's holder) retries.
func (s *store) Release(ctx context.Context, refs []keeper.Ref) error {
	if len(refs) == 0 {
		return nil
	}
	c := s.c
	c.awaitLate(ctx, refs)
	f := c.fanOut(ctx, nil, s.timeout(ctx), s.releaseCall(refs))
	defer f.cancel()
	ok := 0
	var errs []error
	var grace <-chan time.Time // once a majority confirmed: the rest get NodeTimeout more
	for {
		if ok >= c.maj && grace == nil {
			t := newTimer(c.o.NodeTimeout)
			defer putTimer(t)
			grace = t.C
		}
		r, more := f.nextOr(grace)
		if !more {
			break
		}
		if r.err != nil {
			errs = append(errs, r.err)
			continue
		}
		ok++
	}
	if ok < c.maj {
		if f.pending() > 0 {
			errs = append(errs, fmt.Errorf("%d node(s) did not answer in time", f.pending()))
		}
		return fmt.Errorf("redlock: release: %d of %d nodes confirmed, want %d: %w", ok, len(c.nodes), c.maj, errors.Join(errs...))
	}
	return nil
}
