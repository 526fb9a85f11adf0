package leasekit

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/engine"
	"github.com/baton-go/baton/engine/leasekit/keeper"
	"github.com/baton-go/baton/internal/acqtrack"
)

// Engine is a lease engine's client as the recipes see it: its store, its
// keeper, its validated options and its lifetime. An engine builds one in
// its New and hands out the recipes through it.
type Engine struct {
	Name   string // Grant.Engine: "redis", "redlock", "postgres", …
	Pkg    string // prefixes error messages: "redislock", …
	Opts   Options
	Keeper *keeper.Keeper
	Store  Store

	// Ctx is cancelled when the client closes: in-flight attempts and
	// waits end with it.
	Ctx context.Context
	// Err returns nil while the client is open, else why it is not (an
	// error wrapping baton.ErrClosed).
	Err func() error

	// AttemptTimeout bounds each attempt, and Close interrupts it; 0
	// leaves both to the store's Try.
	AttemptTimeout time.Duration
	// Millis requires fixed lease times in whole milliseconds.
	Millis bool

	inflight attemptsInFlight // the attempts' contexts (see attemptctx.go)
}

// Acquire is the acquire loop every recipe of every lease engine shares:
// attempt; while refused (and waiting) sleep until a wake-up, the
// holder's expiry hint or the next backoff step. key is the reentrancy
// key: a ctx derived from a lease with the same key re-enters it.
//
// A failed attempt (its outcome unknown) is forgotten through the store,
// and ends the acquire when:
//   - ctx ended: the error wraps ctx.Err(), and baton.ErrUnavailable too
//     if no attempt ever got the server's answer;
//   - the client closed, or the error is Permanent;
//   - no attempt succeeded for TTL − DriftMargin (a held lease would have
//     been lost by then): baton.ErrSessionLost and baton.ErrUnavailable;
//   - the acquire does not wait: baton.ErrUnavailable.
//
// Otherwise the waiter retries. A store that knows the server was reached
// though the attempt failed (Result.Reached) keeps the waiter contended,
// not cut off.
//
// With Options.Observer set it reports the acquire's start, each attempt
// that did not grant (Position -1: a lease engine keeps no queue) and its
// outcome, and the lease reports its own state changes.
func (e *Engine) Acquire(ctx context.Context, key any, req Request) (*baton.Lease, error) {
	if e.Opts.Observer == nil {
		return e.acquire(ctx, key, req, nil)
	}
	t, ctx := acqtrack.Begin(ctx, e.Opts.Observer, nil, e.Name, req.Name, req.Kind.label())
	l, err := e.acquire(ctx, key, req, t)
	t.End(ctx, l, err)
	return l, err
}

// acquire is Acquire's loop; t is nil when the acquire is not observed.
func (e *Engine) acquire(ctx context.Context, key any, req Request, t *acqtrack.Track) (*baton.Lease, error) {
	if l, err := engine.Reenter(ctx, key); l != nil || err != nil {
		if l != nil {
			t.Reentered()
		}
		return l, err
	}
	// The request lives in the wait, the one allocation of the acquire's
	// own state: the store keeps a pointer to it.
	w := &wait{e: e, key: key, t: t}
	w.req = req
	if err := w.start(ctx); err != nil {
		return nil, err
	}
	w.req.Endless = ctx.Done() == nil
	a := e.Store.Begin(&w.req)
	granted := false
	defer func() { a.End(ctx, granted) }()
	aw, _ := a.(AttemptWatcher)
	unwatch := func() {}
	defer func() { unwatch() }()
	var woke <-chan struct{}
	for n, step := 0, 0; ; n, step = n+1, step+1 {
		if aw != nil {
			// The new watch is up before the old one is dropped.
			ch, u := aw.Watch(n)
			unwatch()
			woke, unwatch = ch, u
		}
		res, err := w.try(ctx, a, n)
		if err == nil && res.Granted {
			var l *baton.Lease
			if l, err = w.hold(ctx, a, res); l != nil {
				granted = true
				return l, nil
			}
			if isPermanent(err) || e.Err() != nil {
				return nil, w.final(err)
			}
			res.Reached = res.Sent // granted, if too late: the server answered
		}
		if err != nil {
			a.Forget(res)
			if ferr := w.failed(ctx, err, res); ferr != nil {
				return nil, ferr
			}
			t.Retry(ctx, -1, err)
		} else {
			w.lastOK, w.reached, w.lastErr = res.Sent, true, nil
			if !w.req.Wait {
				return nil, w.errf("%w", baton.ErrNotAcquired)
			}
			t.Retry(ctx, -1, nil)
			if res.Again {
				continue
			}
		}
		wake, err := w.sleep(ctx, step, res.Hint, res.Poll, woke)
		if err != nil {
			return nil, err
		}
		if wake {
			step = -1 // a release: start the backoff over
		}
	}
}

// wait is one acquire's state across its attempts.
type wait struct {
	e   *Engine
	req Request
	key any
	// lastOK is when the last attempt that got the server's answer was
	// sent; reached reports that one did.
	lastOK  time.Time
	reached bool
	lastErr error           // the last attempt's error; nil after a refusal
	cut     bool            // the last attempt was cut at its timeout (see try)
	t       *acqtrack.Track // nil when the acquire is not observed
}

func (w *wait) errf(format string, args ...any) error {
	return fmt.Errorf("%s: %s %q: "+format, append([]any{w.e.Pkg, w.req.Kind, w.req.Name}, args...)...)
}

// final is err as the acquire returns it: a closed client's own error
// as is, anything else with the lock named.
func (w *wait) final(err error) error {
	if cerr := w.e.Err(); cerr != nil {
		return cerr
	}
	return w.errf("%w", err)
}

// start checks that the acquire may begin and prepares the store.
func (w *wait) start(ctx context.Context) error {
	if err := w.e.Err(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return w.errf("%w", err)
	}
	if p, ok := w.e.Store.(Preparer); ok {
		if err := p.Prepare(ctx); err != nil {
			if ctx.Err() != nil {
				return w.errf("%w: %w", ctx.Err(), err)
			}
			return w.errf("%w: %w", baton.ErrUnavailable, err)
		}
	}
	w.lastOK = time.Now()
	return nil
}

// try runs one attempt, bounded by the engine's AttemptTimeout and
// interrupted by Close.
//
// During a run of failed attempts it ends no later than the session
// bound (see lostAt), or lostFloor after it: an attempt cut there fails,
// and the acquire reports ErrSessionLost on time instead of up to an
// attempt timeout late.
//
// The attempt after one that was cut at its timeout runs until that
// bound instead: a driver closes a connection whose request was cut, and
// its replacement (a TCP and database handshake, statement prepares)
// takes more round trips than one attempt timeout holds on a slow link,
// so every later attempt would be cut too and a server slow but
// answering would end the acquire with ErrSessionLost.
func (w *wait) try(ctx context.Context, a Attempts, n int) (Result, error) {
	if w.e.AttemptTimeout <= 0 {
		return a.Try(ctx, n)
	}
	d := w.e.AttemptTimeout
	switch {
	case w.cut:
		d = max(time.Until(w.lostAt()), lostFloor)
	case w.lastErr != nil:
		d = min(d, max(time.Until(w.lostAt()), min(d, lostFloor)))
	}
	actx := w.e.sharedAttemptCtx(ctx, d)
	if actx == nil {
		var cancel context.CancelFunc
		actx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
		w.e.track(w, cancel)
		defer w.e.untrack(w)
	}
	res, err := a.Try(actx, n)
	// Cut at its own timeout: not by the caller's ctx, nor by Close.
	w.cut = err != nil && actx.Err() == context.DeadlineExceeded && ctx.Err() == nil
	return res, err
}

// hold hands a grant to the keeper, with TokenFloor added. A nil lease
// comes with the reason: a token that would overflow (Permanent, the
// grant forgotten), or the keeper's refusal of a grant that came too late
// to be trusted (the keeper freed it).
func (w *wait) hold(ctx context.Context, a Attempts, res Result) (*baton.Lease, error) {
	tok, ok := Token(res.Token, w.e.Opts.TokenFloor)
	if !ok {
		a.Forget(res)
		return nil, Permanent(fmt.Errorf("%w: token %d + TokenFloor %d overflows uint64", baton.ErrInvalidOption, res.Token, w.e.Opts.TokenFloor))
	}
	g := engine.Grant{
		Name:   w.req.Name,
		Engine: w.e.Name,
		Token:  tok,
		Owner:  res.Ref.Owner,
		Key:    w.key,
	}
	w.t.Grant(&g, "")
	return w.e.Keeper.Hold(ctx, g, res.Ref, res.Sent, w.req.Fixed)
}

// failed decides, after an attempt failed with err, whether the acquire
// gives up, and with which error; nil means wait and retry.
func (w *wait) failed(ctx context.Context, err error, res Result) error {
	if !res.Reached.IsZero() && ctx.Err() == nil {
		// Busy until then: reached, not unreachable.
		w.lastOK, w.reached = later(w.lastOK, res.Reached), true
	}
	w.lastErr = err
	switch since, bound := time.Since(w.lastOK), w.lossBound(); {
	case ctx.Err() != nil:
		return w.ctxEnded(ctx)
	case w.e.Err() != nil:
		return w.e.Err()
	case isPermanent(err):
		return w.errf("%w", err)
	case since >= bound:
		return w.errf("%w: %w: no successful attempt for %v: %w", baton.ErrSessionLost, baton.ErrUnavailable, since.Round(time.Millisecond), err)
	case !w.req.Wait:
		return w.errf("%w: %w", baton.ErrUnavailable, err)
	}
	return nil
}

// lossBound is how long an acquire goes without an answered attempt
// before it gives up on the server: a held lease would have expired.
func (w *wait) lossBound() time.Duration { return w.e.Opts.TTL - w.e.Keeper.DriftMargin() }

// lostAt is when the acquire gives up, lastOK being the send time of the
// last attempt the server answered.
func (w *wait) lostAt() time.Time { return w.lastOK.Add(w.lossBound()) }

// lostFloor is the least time an attempt gets once the session bound has
// come: a server that is back answers within it.
const lostFloor = 50 * time.Millisecond

// ctxEnded is the error of an acquire whose ctx ended: ctx's error, with
// the last attempt's error if it failed, and baton.ErrUnavailable too if
// no attempt ever got the server's answer.
func (w *wait) ctxEnded(ctx context.Context) error {
	switch {
	case w.lastErr == nil:
		return w.errf("%w", ctx.Err())
	case !w.reached:
		return w.errf("%w: %w: the server was never reached (last attempt: %w)", ctx.Err(), baton.ErrUnavailable, w.lastErr)
	}
	return w.errf("%w (last attempt: %w)", ctx.Err(), w.lastErr)
}

// sleep waits before the next attempt: the backoff step (at least poll),
// or the hint (with a little jitter, so that waiters do not all come at
// once) when it is sooner; after a failed attempt, no later than the
// session bound, so the last attempt is made then. wake reports a
// wake-up (a release).
func (w *wait) sleep(ctx context.Context, step int, hint, poll time.Duration, woke <-chan struct{}) (wake bool, err error) {
	delay := max(w.e.Opts.Backoff.Delay(step), poll)
	if hint > 0 && hint < delay {
		delay = hint + time.Duration(rand.Int64N(int64(5*time.Millisecond)))
	}
	if w.lastErr != nil {
		delay = max(0, min(delay, time.Until(w.lostAt())))
	}
	t := time.NewTimer(delay)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false, w.ctxEnded(ctx)
	case <-w.e.Ctx.Done():
		return false, w.e.Err()
	case <-woke:
		return true, nil
	case <-t.C:
		return false, nil
	}
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
