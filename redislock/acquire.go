package redislock

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/engine"
	"github.com/baton-go/baton/engine/leasekit"
	"github.com/baton-go/baton/engine/leasekit/keeper"
)

// reply is one attempt's answer.
type reply struct {
	granted bool
	token   uint64
	hint    time.Duration // until the earliest expiry that could free the lock; < 0 unknown
	waiters int64         // the waiters' count, when the script answered it (wakeone.go)
	acks    int           // replicas that acknowledged (ReplicaAcks > 0 only)
}

// attempt runs the acquire script once, with WAIT pipelined behind it on
// the same connection when ReplicaAcks > 0. It runs on the caller's
// goroutine when the call needs no goroutine to honour ctx (see
// Client.direct).
func (c *Client) attempt(ctx context.Context, s *spec, owner, waiter string, ttl time.Duration, record bool) (reply, <-chan struct{}, error) {
	if c.direct(ctx) {
		r, err := c.runAttempt(ctx, s, owner, waiter, ttl, record)
		return r, closedDone, err
	}
	var got reply // written by the call's goroutine, read only when call returns nil
	done, err := c.callTracked(ctx, func(ctx context.Context) error {
		r, err := c.runAttempt(ctx, s, owner, waiter, ttl, record)
		if err == nil {
			got = r
		}
		return err
	})
	if err != nil {
		return reply{}, done, err
	}
	return got, done, nil
}

// runAttempt is attempt's round trip and the reading of its answer.
func (c *Client) runAttempt(ctx context.Context, s *spec, owner, waiter string, ttl time.Duration, record bool) (reply, error) {
	rec := argNo
	if record {
		rec = argYes
	}
	var w any = noWaiter // the first attempt records no intent: any placeholder
	if waiter != "" {
		w = waiter
	}
	ms := c.ttlArg
	if ttl != c.o.TTL {
		ms = ttl.Milliseconds()
	}
	var (
		v   []any
		err error
		r   reply
	)
	if c.o.ReplicaAcks > 0 {
		v, r.acks, err = c.evalWait(ctx, s, []any{owner, ms, w, c.ttlArg, rec, s.detailArg, s.publishArg, c.procArg})
	} else {
		v, err = c.evalsha(ctx, s.script, s.keys, s.boxed, owner, ms, w, c.ttlArg, rec, s.detailArg, s.publishArg, c.procArg).Slice()
	}
	if err != nil {
		return reply{}, err
	}
	if len(v) < 2 {
		return reply{}, fmt.Errorf("unexpected script reply %v", v)
	}
	g, _ := v[0].(int64)
	n, _ := v[1].(int64)
	if g == 1 && n <= 0 {
		return reply{}, fmt.Errorf("%w: the script granted token %d", ErrBadCounter, n)
	}
	if g == 1 {
		r.granted, r.token = true, uint64(n)
		c.st.warm.pinAsync(c) // before the lease's first renewal
	} else {
		r.hint = time.Duration(n) * time.Millisecond
		if s.one && len(v) > 2 {
			r.waiters, _ = v[2].(int64)
		}
	}
	if s.onReply != nil {
		s.onReply(v)
	}
	return r, nil
}

// evalWait pipelines the script and WAIT on one connection of the primary
// (rdb is a *redis.Client: New checked).
func (c *Client) evalWait(ctx context.Context, s *spec, args []any) ([]any, int, error) {
	for try := 0; ; try++ {
		var ev *redis.Cmd
		var w *redis.Cmd
		_, err := c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			ev = p.EvalSha(ctx, s.script.Hash(), s.keys, args...)
			// Pipeliner lacks Wait; WAIT takes its timeout in ms.
			w = p.Do(ctx, "WAIT", c.o.ReplicaAcks, c.o.ReplicaAckTimeout.Milliseconds())
			return nil
		})
		if isNoScript(ev.Err()) && try == 0 {
			if err := s.script.Load(ctx, c.rdb).Err(); err != nil {
				return nil, 0, err
			}
			continue
		}
		if err != nil {
			return nil, 0, err
		}
		v, err := ev.Slice()
		if err != nil {
			return nil, 0, err
		}
		acks, err := w.Int()
		if err != nil {
			return nil, 0, err
		}
		return v, acks, nil
	}
}

// permanent reports a Redis error reply that retrying cannot fix (a key of
// the wrong type, a script refused); network errors and transient replies
// (LOADING, READONLY after a failover, CLUSTERDOWN, TRYAGAIN…) are not.
func permanent(err error) bool {
	var re redis.Error
	if !errors.As(err, &re) {
		return false
	}
	msg := err.Error()
	return strings.HasPrefix(msg, "WRONGTYPE") || strings.HasPrefix(msg, "ERR") || strings.HasPrefix(msg, "NOPERM")
}

// badCounter reports the scripts' refusal of a token counter out of range
// (see mint), or a grant whose token shows one.
func badCounter(err error) bool {
	if errors.Is(err, ErrBadCounter) {
		return true
	}
	var re redis.Error
	return errors.As(err, &re) && strings.HasPrefix(err.Error(), "BATONCOUNTER")
}

// attempts are one acquire's attempts: each runs the recipe's script
// under a new owner, one round trip. The waiter's identity lasts for the
// whole acquire, so its waiting intent keeps its place. The first attempt
// records no intent and watches nothing: an uncontended acquire leaves no
// trace in the waiters' set and costs no SUBSCRIBE. A refused first
// attempt is followed at once by one that records the intent, after the
// release channel is watched, so that a release in between is not missed.
type attempts struct {
	c   *Client
	req *leasekit.Request
	s   *spec
	// waiter is the waiter's id, made by the first attempt that records
	// the intent (see need): an acquire granted at its first attempt, or
	// one that does not wait, never needs one.
	waiter string
	num    string // the waiter's number, when woken alone (wakeone.go)
	tried  bool
	// lastDone is closed once the last attempt's call has ended: an
	// abandoned attempt can still record the waiting intent after the
	// wait ended, so its removal waits for it.
	lastDone <-chan struct{}
}

// Bind builds the spec of a mutex or of one side of a read/write lock
// once, when the lock object is made (leasekit.Binder); a semaphore's and
// an election's depend on each acquire's N or candidate ID.
func (s *store) Bind(name string, kind leasekit.Kind) any {
	switch kind {
	case leasekit.KindMutex, leasekit.KindRead, leasekit.KindWrite:
		return s.c.specFor(&leasekit.Request{Name: name, Kind: kind})
	}
	return nil
}

// Begin starts one acquire for package leasekit.
func (s *store) Begin(req *leasekit.Request) leasekit.Attempts {
	sp, _ := req.Bound.(*spec)
	if sp == nil {
		sp = s.c.specFor(req)
	}
	return &attempts{c: s.c, req: req, s: sp, lastDone: closedDone}
}

// need makes the waiter's id, before attempt n when it records the
// waiting intent (from the second attempt of a waiting acquire on).
func (a *attempts) need(n int) {
	if a.waiter != "" || !a.req.Wait || n == 0 {
		return
	}
	if a.s.one {
		a.waiter, a.num = a.c.wo.Next()
	} else {
		a.waiter = engine.NewOwnerID()
	}
}

// noWatch is the unwatch of an attempt that watches nothing.
func noWatch() {}

// Watch watches the name's channel from the second attempt of a waiting
// acquire on.
func (a *attempts) Watch(n int) (<-chan struct{}, func()) {
	if !a.req.Wait || n == 0 {
		return nil, noWatch
	}
	a.need(n)
	if a.num != "" {
		return a.c.hub.watchWaiter(a.num)
	}
	return a.c.hub.watch(a.s.wake)
}

func (a *attempts) Try(ctx context.Context, n int) (leasekit.Result, error) {
	ttl := a.c.o.TTL
	if a.req.Fixed > 0 {
		ttl = a.req.Fixed
	}
	a.need(n)
	owner := engine.NewOwnerID()
	res := leasekit.Result{Sent: time.Now(), Ref: a.s.ref(owner, 0, false)}
	r, done, err := a.c.attempt(ctx, a.s, owner, a.waiter, ttl, a.req.Wait && n > 0)
	a.lastDone, a.tried = done, true
	switch {
	case err != nil && badCounter(err):
		return res, leasekit.Permanent(fmt.Errorf("%w: %w", ErrBadCounter, err))
	case err != nil && permanent(err):
		return res, leasekit.Permanent(err)
	case err != nil:
		return res, err
	case !r.granted:
		res.Hint, res.Again = r.hint, n == 0
		if a.num != "" {
			res.Poll = a.c.pollFloor(r.waiters)
		}
		return res, nil
	}
	res.Granted, res.Token, res.Ref = true, r.token, a.s.ref(owner, r.token, true)
	if a.c.o.ReplicaAcks > 0 && r.acks < a.c.o.ReplicaAcks {
		a.c.unwind(ctx, res.Ref)
		return leasekit.Result{}, leasekit.Permanent(fmt.Errorf("%w: %w: %d of %d replicas acknowledged within %v",
			baton.ErrUnavailable, ErrNotReplicated, r.acks, a.c.o.ReplicaAcks, a.c.o.ReplicaAckTimeout))
	}
	return res, nil
}

// Forget frees, in the background and owner-checked, whatever a failed
// attempt may have taken (nothing after an unwound grant).
func (a *attempts) Forget(res leasekit.Result) {
	if res.Ref.Owner != "" {
		a.c.k.Abandon(res.Ref)
	}
}

func (a *attempts) End(_ context.Context, granted bool) {
	if a.waiter != "" && a.tried && !granted {
		a.c.unwait(a.s, a.waiter, a.lastDone)
	}
}

// unwind releases a grant the acquire will not return (not replicated),
// owner-checked, right away, within the caller's deadline; if the server
// does not answer in time, the keeper retries in the background.
func (c *Client) unwind(ctx context.Context, ref keeper.Ref) {
	ctx, cancel := context.WithTimeout(ctx, c.o.TTL/3)
	defer cancel()
	stop := context.AfterFunc(c.ctx, cancel)
	defer stop()
	if err := c.st.Release(ctx, []keeper.Ref{ref}); err != nil {
		c.k.Abandon(ref)
	}
}

// unwait removes a waiting intent of an acquire that gave up, in the
// background (the caller's context may be over): it is a courtesy to
// inspect and to writers' fairness, since the intent expires by itself
// after one TTL anyway. It runs after the abandoned attempt (after) has
// ended, so that a late attempt cannot record the intent again behind it
// (a queued intent would hold up a read/write lock's queue for a TTL). The
// goroutine is tracked like a call.
func (c *Client) unwait(s *spec, waiter string, after <-chan struct{}) {
	c.callMu.Lock()
	if c.draining {
		c.callMu.Unlock()
		return
	}
	c.calls.Add(1)
	c.callMu.Unlock()
	go func() {
		defer c.calls.Done()
		t := time.NewTimer(c.o.TTL)
		select {
		case <-after:
		case <-t.C: // the intent has expired by now anyway
		}
		t.Stop()
		ctx, cancel := context.WithTimeout(context.Background(), c.o.TTL/3)
		defer cancel()
		if !s.queued {
			_ = c.rdb.ZRem(ctx, s.waiters, waiter).Err()
			return
		}
		m := s.waiterPrefix + waiter
		_, _ = c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			p.ZRem(ctx, s.keys[2], m)
			p.ZRem(ctx, s.keys[3], m)
			return nil
		})
	}()
}
