package leasekit

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// sharedSlots is how many shared attempt contexts an AttemptTimeout
// spans: one is handed to the attempts that start within
// AttemptTimeout/sharedSlots of its making, so each of them is cut
// between 15/16 of AttemptTimeout and AttemptTimeout after it starts.
const sharedSlots = 16

// sharedAttempt is one attempt context shared by the attempts that start
// within a slot (see Engine.sharedCtx).
type sharedAttempt struct {
	ctx    context.Context // a child of Engine.Ctx with a deadline AttemptTimeout after start
	cancel context.CancelFunc
	start  time.Time
}

// sharedAttemptCtx returns the context of an attempt under ctx bounded
// by d, when it can be shared, else nil.
//
// When ctx can never end (its Done is nil, as context.Background's) and
// carries no deadline of its own, the attempt's bound and Close are the
// only ways it ends, which are the same for every such attempt: they
// share one context per slot of AttemptTimeout/16 (sharedCtx), carrying
// ctx's values, instead of a timer, a deadline context and an AfterFunc
// on Engine.Ctx each. That was seven of the allocations of every
// uncontended lock on every lease engine, and one timer armed and
// stopped per attempt. Such an attempt is cut up to a sixteenth of
// AttemptTimeout sooner than on its own context, never later; an attempt
// with a shorter bound (the session bound of a run of failures, see
// wait.try) keeps a context of its own.
func (e *Engine) sharedAttemptCtx(ctx context.Context, d time.Duration) context.Context {
	if d != e.AttemptTimeout || ctx.Done() != nil {
		return nil
	}
	if _, ok := ctx.Deadline(); ok {
		return nil
	}
	shared := e.sharedCtx()
	if ctx == context.Background() || ctx == context.TODO() {
		return shared
	}
	return valuesOf{Context: shared, vals: ctx}
}

// Detached returns a context with ctx's values that ends an
// AttemptTimeout from now (up to a sixteenth of it sooner, see sharedCtx)
// or at Close, but not with ctx: for a request an engine lets run on
// after its acquire stopped waiting for it (sqllock's settle). It shares
// the attempts' context of the current slot, so it costs no timer and no
// AfterFunc of its own.
func (e *Engine) Detached(ctx context.Context) context.Context {
	shared := e.sharedCtx()
	if ctx == context.Background() || ctx == context.TODO() {
		return shared
	}
	// WithoutCancel: ctx's values but neither its end nor its
	// cancellation, which a lookup would otherwise find before the
	// shared context's (see valuesOf).
	return valuesOf{Context: shared, vals: context.WithoutCancel(ctx)}
}

// sharedCtx returns the shared attempt context of the current slot,
// making a new one when the last is older than a slot or has ended.
func (e *Engine) sharedCtx() context.Context {
	now := time.Now()
	if s := e.inflight.shared.Load(); s != nil && now.Sub(s.start) < e.AttemptTimeout/sharedSlots && s.ctx.Err() == nil {
		return s.ctx
	}
	s := &sharedAttempt{start: now}
	// Its own timer cancels it at the deadline; Close cancels it with
	// Engine.Ctx. At most sharedSlots of them are pending at once.
	s.ctx, s.cancel = context.WithDeadline(e.Ctx, now.Add(e.AttemptTimeout))
	e.inflight.shared.Store(s)
	return s.ctx
}

// valuesOf is a shared attempt context (Context) carrying the values of
// the acquire's context (vals), whose Done is nil. A lookup tries vals
// first: a context that cannot end holds no cancellation of the context
// package, so contexts derived from a valuesOf (a driver's AfterFunc)
// still find the shared context's and register with it, without a
// goroutine.
type valuesOf struct {
	context.Context
	vals context.Context
}

func (v valuesOf) Value(key any) any {
	if x := v.vals.Value(key); x != nil {
		return x
	}
	return v.Context.Value(key)
}

// attemptsInFlight are the attempts on contexts of their own (see
// wait.try), which Close cancels: one AfterFunc on Engine.Ctx for the
// engine's life instead of one per attempt.
type attemptsInFlight struct {
	shared atomic.Pointer[sharedAttempt] // the current shared context

	once   sync.Once
	mu     sync.Mutex
	closed bool
	cancel map[*wait]context.CancelFunc
}

// track registers the cancel func of w's attempt, for Close; after Close
// it cancels the attempt at once.
func (e *Engine) track(w *wait, cancel context.CancelFunc) {
	f := &e.inflight
	f.once.Do(func() {
		f.cancel = make(map[*wait]context.CancelFunc)
		context.AfterFunc(e.Ctx, func() {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.closed = true
			for _, c := range f.cancel {
				c()
			}
		})
	})
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		cancel()
		return
	}
	f.cancel[w] = cancel
}

// untrack forgets w's attempt once it has returned.
func (e *Engine) untrack(w *wait) {
	f := &e.inflight
	f.mu.Lock()
	delete(f.cancel, w)
	f.mu.Unlock()
}
