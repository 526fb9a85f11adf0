package baton

import (
	"context"
	"math/rand/v2"
	"time"
)

// Defaults for Backoff. Their effect: a failed re-create, reconnect or
// re-acquire is retried after about DefaultBackoffBase, doubling up to
// DefaultBackoffMax, with full jitter so that many clients that failed
// together do not retry together, and never in a hot loop.
const (
	DefaultBackoffBase = 20 * time.Millisecond
	DefaultBackoffMax  = 2 * time.Second
)

// Backoff is the retry discipline for re-create, reconnect and re-acquire:
// exponential backoff with full jitter and a total budget. The zero value
// uses the defaults and no budget (the caller's context bounds it).
type Backoff struct {
	Base   time.Duration // first delay's upper bound; 0 means DefaultBackoffBase
	Max    time.Duration // cap on a single delay; 0 means DefaultBackoffMax
	Budget time.Duration // total time for all attempts; 0 means only ctx bounds it

	// Rand returns a float in [0,1); nil uses math/rand/v2. Tests inject it.
	Rand func() float64
}

// Delay returns the jittered delay before retry number attempt (0-based).
func (b Backoff) Delay(attempt int) time.Duration {
	base, max := b.Base, b.Max
	if base <= 0 {
		base = DefaultBackoffBase
	}
	if max <= 0 {
		max = DefaultBackoffMax
	}
	d := base
	for i := 0; i < attempt && d < max; i++ {
		d *= 2
	}
	if d > max {
		d = max
	}
	r := rand.Float64
	if b.Rand != nil {
		r = b.Rand
	}
	// Full jitter, but never below a tenth of the step: a zero delay would
	// be the instant retry the discipline exists to prevent.
	return d/10 + time.Duration(r()*float64(d-d/10))
}

// Retry calls op until it returns nil, a permanent error (retryable reports
// false), the budget is spent or ctx is done. It sleeps Delay(n) between
// attempts and returns the last error; when ctx ends first the result wraps
// ctx's error as well.
func (b Backoff) Retry(ctx context.Context, retryable func(error) bool, op func(context.Context) error) error {
	if b.Budget > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, b.Budget)
		defer cancel()
	}
	for attempt := 0; ; attempt++ {
		err := op(ctx)
		if err == nil || !retryable(err) {
			return err
		}
		t := time.NewTimer(b.Delay(attempt))
		select {
		case <-ctx.Done():
			t.Stop()
			return joinCtx(err, ctx)
		case <-t.C:
		}
	}
}

// joinCtx wraps both the last operational error and the context's error.
func joinCtx(err error, ctx context.Context) error {
	return &retryErr{last: err, ctx: ctx.Err()}
}

type retryErr struct{ last, ctx error }

func (e *retryErr) Error() string   { return e.last.Error() + " (gave up: " + e.ctx.Error() + ")" }
func (e *retryErr) Unwrap() []error { return []error{e.last, e.ctx} }
