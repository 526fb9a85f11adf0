package redislock

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/keeper"
)

// spec is one recipe's side of an acquire: which script, on which keys,
// and how the grant is kept.
type spec struct {
	recipe  string // for messages: "mutex", "read", "write", "permit", "leader"
	name    string
	key     any // reentrancy key (nil: none)
	script  *redis.Script
	keys    []string
	detail  string // ARGV[7]
	publish string // ARGV[8]: channel to publish a grant on
	waiters string // the zset of waiting intents (mutex, permits, leader)
	// queued: the read/write lock's queue, keys[2] (intents) and keys[3]
	// (order), members waiterPrefix + waiter id.
	queued       bool
	waiterPrefix string
	wake         string // the name's channel
	// zset: the grant is a member "<owner>:<token>" of keys[zsetKey]; else
	// the owner of the hash keys[0].
	zset      bool
	zsetKey   int
	companion string
	// onReply, if set, sees every script reply (the semaphore's N check).
	onReply func([]any)
}

// ref is how the keeper renews and releases the grant of owner.
func (s *spec) ref(owner string, token uint64, known bool) keeper.Ref {
	a := aux{zset: s.zset, companion: s.companion, wake: s.wake}
	key := s.keys[0]
	if s.zset {
		key = s.keys[s.zsetKey]
		if known {
			a.member = owner + ":" + strconv.FormatUint(token, 10)
		}
	}
	return keeper.Ref{Key: key, Owner: owner, Aux: a}
}

// reply is one attempt's answer.
type reply struct {
	granted bool
	token   uint64
	hint    time.Duration // until the earliest expiry that could free the lock; < 0 unknown
	acks    int           // replicas that acknowledged (ReplicaAcks > 0 only)
}

// attempt runs the acquire script once, with WAIT pipelined behind it on
// the same connection when ReplicaAcks > 0.
func (c *Client) attempt(ctx context.Context, s *spec, owner, waiter string, ttl time.Duration, record bool) (reply, <-chan struct{}, error) {
	rec := "0"
	if record {
		rec = "1"
	}
	args := []any{owner, ttl.Milliseconds(), c.floor, waiter, c.o.TTL.Milliseconds(), rec, s.detail, s.publish}
	var got reply // written by the call's goroutine, read only when call returns nil
	done, err := c.callTracked(ctx, func(ctx context.Context) error {
		var (
			v   []any
			err error
			r   reply
		)
		if c.o.ReplicaAcks > 0 {
			v, r.acks, err = c.evalWait(ctx, s, args)
		} else {
			v, err = s.script.Run(ctx, c.rdb, s.keys, args...).Slice()
		}
		if err != nil {
			return err
		}
		if len(v) < 2 {
			return fmt.Errorf("unexpected script reply %v", v)
		}
		g, _ := v[0].(int64)
		n, _ := v[1].(int64)
		if g == 1 {
			r.granted, r.token = true, uint64(n)
		} else {
			r.hint = time.Duration(n) * time.Millisecond
		}
		if s.onReply != nil {
			s.onReply(v)
		}
		got = r
		return nil
	})
	if err != nil {
		return reply{}, done, err
	}
	return got, done, nil
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

// acquire is the loop every recipe shares: attempt; while the lock is
// taken (wait) sleep until a wake-up, the hint or the next backoff step.
// fixed > 0 is a fixed lease time (never renewed).
func (c *Client) acquire(ctx context.Context, s *spec, wait bool, fixed time.Duration) (*baton.Lease, error) {
	if l, err := baton.Reenter(ctx, s.key); l != nil || err != nil {
		return l, err
	}
	errf := func(format string, args ...any) error {
		return fmt.Errorf("redislock: %s %q: "+format, append([]any{s.recipe, s.name}, args...)...)
	}
	if err := c.checkOpen(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, errf("%w", err)
	}
	ttl := c.o.TTL
	if fixed > 0 {
		ttl = fixed
	}
	waiter := baton.NewOwnerID()
	sent := false
	granted := false
	// lastDone is closed once the last attempt's call has ended: an
	// abandoned attempt can still record the waiting intent after the wait
	// ended, so its removal waits for it.
	var lastDone <-chan struct{} = closedDone
	defer func() {
		if wait && sent && !granted {
			c.unwait(s, waiter, lastDone)
		}
	}()
	// A waiter that has not reached the server for this long would have
	// lost a lease it held: its wait is over (ErrSessionLost).
	sessionBound := c.o.TTL - c.k.DriftMargin()
	lastOK := time.Now()
	// The release channel is watched from the second attempt on: an
	// uncontended acquire costs no SUBSCRIBE. The watch is renewed before
	// the previous one is dropped, so the subscription stays up for the
	// whole wait.
	var woke <-chan struct{}
	unwatch := func() {}
	defer func() { unwatch() }()
	for attempt, tries := 0, 0; ; attempt, tries = attempt+1, tries+1 {
		if wait && tries > 0 {
			w, u := c.hub.watch(s.wake)
			unwatch()
			woke, unwatch = w, u
		}
		owner := baton.NewOwnerID()
		start := time.Now()
		actx, cancel := context.WithTimeout(ctx, c.o.TTL/3)
		stop := context.AfterFunc(c.ctx, cancel) // Close interrupts the attempt
		// The first attempt records no waiting intent: uncontended
		// acquires leave no trace in the waiters' set; a waiter's intent
		// is recorded by its next attempt, which follows at once.
		r, done, err := c.attempt(actx, s, owner, waiter, ttl, wait && tries > 0)
		lastDone = done
		stop()
		cancel()
		sent = true
		if err == nil && r.granted {
			if c.o.ReplicaAcks > 0 && r.acks < c.o.ReplicaAcks {
				c.unwind(ctx, s.ref(owner, r.token, true))
				return nil, errf("%w: %w: %d of %d replicas acknowledged within %v", baton.ErrUnavailable, ErrNotReplicated, r.acks, c.o.ReplicaAcks, c.o.ReplicaAckTimeout)
			}
			lease, herr := c.k.Hold(ctx, baton.Grant{
				Name:   s.name,
				Engine: "redis",
				Token:  r.token,
				Owner:  owner,
				Key:    s.key,
			}, s.ref(owner, r.token, true), start, fixed)
			if herr == nil {
				granted = true
				return lease, nil
			}
			if cerr := c.checkOpen(); cerr != nil {
				return nil, cerr
			}
			err = herr // the grant came too late to be trusted; Hold freed it
		}
		if err != nil {
			// The outcome is unknown: free whatever the attempt may have
			// taken, in the background, owner-checked.
			c.k.Abandon(s.ref(owner, 0, false))
			switch {
			case ctx.Err() != nil:
				return nil, errf("%w (last attempt: %v)", ctx.Err(), err)
			case c.checkOpen() != nil:
				return nil, c.checkOpen()
			case permanent(err):
				return nil, errf("%w", err)
			case time.Since(lastOK) >= sessionBound:
				return nil, errf("%w: %w: no successful attempt for %v: %v", baton.ErrSessionLost, baton.ErrUnavailable, time.Since(lastOK).Round(time.Millisecond), err)
			case !wait:
				return nil, errf("%w: %v", baton.ErrUnavailable, err)
			}
		} else {
			lastOK = start
			if !wait {
				return nil, errf("%w", baton.ErrNotAcquired)
			}
			if tries == 0 {
				// Taken: subscribe, then try again at once, so that a
				// release between this attempt and the SUBSCRIBE is not
				// missed.
				continue
			}
		}
		delay := c.o.Backoff.Delay(attempt)
		if r.hint > 0 && r.hint < delay {
			// The holder's key expires sooner: try right after it, with a
			// little jitter so that waiters do not all come at once.
			delay = r.hint + time.Duration(rand.Int64N(int64(5*time.Millisecond)))
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, errf("%w", ctx.Err())
		case <-c.closing:
			t.Stop()
			return nil, c.checkOpen()
		case <-woke:
			attempt = -1 // a release: start the backoff over
		case <-t.C:
		}
		t.Stop()
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
