package baton

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// State is where a lease stands. Its life is
// Waiting → Held → (Suspended ⇄ Held) → Lost | Released.
type State int32

const (
	// Waiting: the acquire has queued and is not granted yet.
	Waiting State = iota
	// Held: the lock is granted and the session or renewal is healthy.
	Held
	// Suspended: the connection or renewal is in doubt; ownership is
	// uncertain. Side effects must pause until Held comes back. Engines
	// report it before any other client can be granted the lock.
	Suspended
	// Lost: final. The session expired or could have expired, or the entry
	// is gone. A new session never resurrects a lost lease.
	Lost
	// Released: final. The holder released it.
	Released
)

func (s State) String() string {
	switch s {
	case Waiting:
		return "waiting"
	case Held:
		return "held"
	case Suspended:
		return "suspended"
	case Lost:
		return "lost"
	case Released:
		return "released"
	}
	return fmt.Sprintf("State(%d)", int32(s))
}

// Ended reports whether s is final (Lost or Released).
func (s State) Ended() bool { return s == Lost || s == Released }

// Locker is what every exclusive lock of every engine offers.
type Locker interface {
	// Lock blocks until the lock is granted or ctx is done. On ctx's end it
	// returns promptly with an error wrapping ctx.Err(), and the caller's
	// queue entry, key or row is removed by a cleanup that belongs to the
	// session or client. A ctx derived from a lease of this same lock
	// re-enters (see the package doc).
	Lock(ctx context.Context) (*Lease, error)
	// TryLock makes one non-blocking attempt; it returns ErrNotAcquired
	// when another owner holds the lock.
	TryLock(ctx context.Context) (*Lease, error)
}

// grant describes a successful acquire to newLease; engines fill in
// engine.Grant, which package engine hands over through the bridge.
type grant struct {
	Name   string // normalised lock name
	Engine string // "zk", "etcd", "redis", "redlock", "postgres", "mysql", "sqlite"
	Token  uint64 // the fencing token, token floor already added
	Owner  string // identity unique to this grant (entry path, owner value, row owner)
	// Key identifies the lock object for reentrancy; a later acquire on an
	// object with an equal Key and a context derived from this lease
	// re-enters. It must be comparable. Nil disables reentrancy.
	Key any
	// Release removes the remote entry, and only this grant's entry. It must
	// be safe to call again after it returned an error (unknown outcome).
	Release func(ctx context.Context) error
	// OnEnd, if set, runs once after the lease became Lost or Released, so
	// the engine can stop whatever watched this lease.
	OnEnd func()

	// Observer, if set, is told of the lease's state changes (Suspended,
	// Resumed, Lost, Released, ReleaseFailed), with Recipe, Session and
	// Acquire copied into each event.
	Observer Observer
	Recipe   string // "mutex", "read", "write", "semaphore", "election"
	Session  string // the engine session, when there is one
	Acquire  uint64 // the acquire's ID (NextAcquireID), pairing grant and end
}

// Lease is one grant of a lock. Its methods are safe for concurrent use.
//
// Holding a lease does not guarantee exclusive access to anything: a paused
// holder may hold a lease that the engine has already declared lost, and
// the next holder may run before this process notices. Pass Token to the
// resource and let it reject stale writes (package fence).
type Lease struct {
	g     grant
	outer *Lease // the lease found in the acquire context, for reentrancy
	// ctx is made by the first Context or Done (under mu), cancelled
	// at once if the lease has ended by then: most leases are released
	// without anyone asking for it, and a cancellable context is two
	// allocations of every lock+unlock.
	ctx    context.Context
	cancel context.CancelCauseFunc
	base   leaseBase // ctx's parent
	ctl    control   // newLease's, in the same allocation

	mu    sync.Mutex
	state State
	cause error // why the lease ended
	// changed is closed on the next state change; made by the first
	// Observe after a change, since most leases are never observed.
	changed   chan struct{}
	holds     int
	releasing bool

	granted   time.Time // when NewLease built it, for Event.Hold
	suspended time.Time // when it was last suspended, for Event.Duration
}

type leaseKey struct{}

// leaseBase is the parent of a lease's context: the acquire context's
// values, and the lease under leaseKey, without its cancellation or
// deadline. It is context.WithValue(context.WithoutCancel(parent),
// leaseKey{}, l) in one value that lives inside the Lease, so that
// newLease does not allocate both.
type leaseBase struct {
	parent context.Context
	l      *Lease
}

func (b *leaseBase) Deadline() (time.Time, bool) { return time.Time{}, false }
func (b *leaseBase) Done() <-chan struct{}       { return nil }
func (b *leaseBase) Err() error                  { return nil }

func (b *leaseBase) Value(key any) any {
	if key == (leaseKey{}) {
		return b.l
	}
	return b.parent.Value(key)
}

func (b *leaseBase) String() string { return "baton.Lease" }

// newLease builds the lease for a grant, in state Held with one hold, and
// the Control through which the engine reports suspension and loss. The
// lease's context carries parent's values (so nested acquires find it) but
// not parent's cancellation: the acquire context bounds the wait, not the
// holding.
func newLease(parent context.Context, g grant) (*Lease, *control) {
	l := &Lease{g: g, state: Held, holds: 1}
	if g.Observer != nil {
		l.granted = time.Now()
	}
	l.outer, _ = parent.Value(leaseKey{}).(*Lease)
	l.base = leaseBase{parent: parent, l: l}
	l.ctl.l = l
	return l, &l.ctl
}

// Name returns the normalised lock name.
func (l *Lease) Name() string { return l.g.Name }

// Engine returns the engine's short name (as in BATON_ENGINE).
func (l *Lease) Engine() string { return l.g.Engine }

// Token returns the fencing token. Pass it with every write to the resource.
func (l *Lease) Token() uint64 { return l.g.Token }

// Owner returns the identity unique to this grant.
func (l *Lease) Owner() string { return l.g.Owner }

// Context returns a context cancelled when the lease is lost (cause wraps
// ErrLost) or released (cause ErrReleased). It is not cancelled on
// suspension: watch Observe for that.
func (l *Lease) Context() context.Context {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ctx == nil {
		l.ctx, l.cancel = context.WithCancelCause(&l.base)
		if l.state.Ended() {
			l.cancel(l.cause)
		}
	}
	return l.ctx
}

// Done is closed when the lease has ended (lost or released).
func (l *Lease) Done() <-chan struct{} { return l.Context().Done() }

// Err returns nil while the lease lives, else why it ended (wrapping ErrLost
// or equal to ErrReleased).
func (l *Lease) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cause
}

// State returns the current state.
func (l *Lease) State() State {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.state
}

// Observe returns the current state and a channel closed at the next state
// change. It never misses a change: read the state, do the work the state
// allows, then wait on the channel and Observe again.
func (l *Lease) Observe() (State, <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.changed == nil {
		l.changed = make(chan struct{})
	}
	return l.state, l.changed
}

// Holds returns the reentrant hold count (0 once ended).
func (l *Lease) Holds() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.holds
}

// Release gives back one hold. The last hold removes the remote entry (and
// only this grant's entry); the context is then cancelled with ErrReleased.
// Releasing more often than acquired returns ErrNotHeld; releasing a lost
// lease returns its loss error (wrapping ErrLost).
//
// When the remote removal fails (ctx ended, the connection failed: its
// outcome is unknown), Release returns the error and the lease ends Lost
// at once, with a cause wrapping ErrLost and the error; the engine goes on
// removing the entry in the background, owner-checked, until it is gone
// or has expired on the server. So a holder that logs the error and moves
// on never leaves the lock held and renewed behind it, and it learns that
// the lease ended before the background removal can let anyone else in.
// Removal is exact: it never frees a newer grant.
func (l *Lease) Release(ctx context.Context) error {
	l.mu.Lock()
	switch {
	case l.state == Lost:
		l.mu.Unlock()
		return l.cause
	case l.state == Released || l.holds == 0 || l.releasing:
		l.mu.Unlock()
		return fmt.Errorf("%w: %q released more often than acquired", ErrNotHeld, l.g.Name)
	}
	l.holds--
	if l.holds > 0 {
		l.mu.Unlock()
		return nil
	}
	l.releasing = true
	l.mu.Unlock()

	var err error
	if l.g.Release != nil {
		err = l.g.Release(ctx)
	}
	if err != nil {
		l.ctl.releaseFailed(err) // unless the engine did, before its background removal
		l.mu.Lock()
		l.releasing = false
		l.mu.Unlock()
		return fmt.Errorf("baton: release %q: %w (the lease has ended; the entry is removed in the background)", l.g.Name, err)
	}

	l.mu.Lock()
	l.releasing = false
	if l.state == Lost { // lost while the removal was in flight
		l.mu.Unlock()
		return l.cause
	}
	l.endLocked(Released, ErrReleased)
	l.mu.Unlock()
	l.emit(EventReleased, nil, 0, 0)
	l.afterEnd()
	return nil
}

// emit tells the grant's observer of a state change of the lease: d is
// Event.Duration, lead Event.Lead.
func (l *Lease) emit(kind EventKind, err error, d, lead time.Duration) {
	if l.g.Observer == nil {
		return
	}
	now := time.Now()
	l.g.Observer.Observe(l.Context(), Event{
		Kind: kind, Time: now, Engine: l.g.Engine, Name: l.g.Name, Recipe: l.g.Recipe,
		Acquire: l.g.Acquire, Token: l.g.Token, Owner: l.g.Owner, Session: l.g.Session,
		Hold: now.Sub(l.granted), Duration: d, Lead: lead, Err: err,
	})
}

func (l *Lease) setLocked(s State) {
	l.state = s
	if l.changed != nil {
		close(l.changed)
		l.changed = nil
	}
}

func (l *Lease) endLocked(s State, cause error) {
	l.holds = 0
	l.cause = cause
	l.setLocked(s)
	if l.cancel != nil {
		l.cancel(cause)
	}
}

func (l *Lease) afterEnd() {
	if l.g.OnEnd != nil {
		l.g.OnEnd()
	}
}

// control is the engine's side of a lease: it reports suspension,
// recovery and loss. Only the engine that built the lease holds it (as
// engine.Control).
type control struct{ l *Lease }

// Lease returns the controlled lease.
func (c *control) Lease() *Lease { return c.l }

// Suspend moves a Held lease to Suspended; otherwise it does nothing.
func (c *control) Suspend() {
	c.l.mu.Lock()
	ok := c.l.state == Held
	if ok {
		c.l.setLocked(Suspended)
		if c.l.g.Observer != nil {
			c.l.suspended = time.Now()
		}
	}
	c.l.mu.Unlock()
	if ok {
		c.l.emit(EventSuspended, nil, 0, 0)
	}
}

// Resume moves a Suspended lease back to Held; otherwise it does nothing.
// Engines call it only after re-verifying ownership on the same session.
func (c *control) Resume() {
	c.l.mu.Lock()
	ok := c.l.state == Suspended
	var d time.Duration
	if ok {
		c.l.setLocked(Held)
		if c.l.g.Observer != nil {
			d = time.Since(c.l.suspended)
		}
	}
	c.l.mu.Unlock()
	if ok {
		c.l.emit(EventResumed, nil, d, 0)
	}
}

// Lose ends the lease as Lost with a cause that should wrap ErrLost (it is
// wrapped if it does not). It is a no-op on an ended lease and reports
// whether it ended the lease.
func (c *control) Lose(cause error) bool { return c.LoseAhead(cause, 0) }

// LoseAhead is Lose for an engine that knows how far ahead of the server
// it declares the loss: lead is how long before the earliest moment the
// server could expire the grant (a lease engine's deadline loss declares
// it DriftMargin early). The lease's EventLost carries it as Lead; 0
// means unknown, and a negative lead is reported as 0.
func (c *control) LoseAhead(cause error, lead time.Duration) bool {
	if cause == nil {
		cause = ErrLost
	} else if !errors.Is(cause, ErrLost) {
		cause = fmt.Errorf("%w: %w", ErrLost, cause)
	}
	c.l.mu.Lock()
	if c.l.state.Ended() {
		c.l.mu.Unlock()
		return false
	}
	c.l.endLocked(Lost, cause)
	c.l.mu.Unlock()
	c.l.emit(EventLost, cause, 0, max(lead, 0))
	c.l.afterEnd()
	return true
}

// releaseFailed ends the lease Lost after its release failed with err
// (see Lease.Release), telling the observer of the failure first, while
// the hold it failed to end is still open. It is a no-op on an ended
// lease.
func (c *control) releaseFailed(err error) bool {
	c.l.mu.Lock()
	ended := c.l.state.Ended()
	c.l.mu.Unlock()
	if ended {
		return false
	}
	c.l.emit(EventReleaseFailed, err, 0, 0)
	return c.Lose(fmt.Errorf("%w: its release failed, and the entry is removed in the background: %w", ErrLost, err))
}

// reenter looks in ctx for a live lease whose Grant.Key equals key (the
// lease itself or one it was nested in). When it finds one it adds a hold
// and returns it. It returns an error wrapping ErrLost when that lease was
// lost, and (nil, nil) when ctx carries no lease of this lock, in which case
// the caller acquires normally.
func reenter(ctx context.Context, key any) (*Lease, error) {
	if key == nil {
		return nil, nil
	}
	for l, _ := ctx.Value(leaseKey{}).(*Lease); l != nil; l = l.outer {
		if l.g.Key != key {
			continue
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		switch {
		case l.state == Lost:
			return nil, l.cause
		case l.state.Ended() || l.releasing:
			return nil, nil
		}
		l.holds++
		return l, nil
	}
	return nil, nil
}

// holding returns the live lease in ctx whose Grant.Key equals key, without
// adding a hold. Recipes use it to refuse what would deadlock (a reader
// asking for the write side of the same read/write lock).
func holding(ctx context.Context, key any) (*Lease, bool) {
	if key == nil {
		return nil, false
	}
	for l, _ := ctx.Value(leaseKey{}).(*Lease); l != nil; l = l.outer {
		if l.g.Key == key {
			if st := l.State(); st == Held || st == Suspended {
				return l, true
			}
			return nil, false
		}
	}
	return nil, false
}

// LeaseFrom returns the innermost lease whose context ctx derives from.
func LeaseFrom(ctx context.Context) (*Lease, bool) {
	l, ok := ctx.Value(leaseKey{}).(*Lease)
	return l, ok
}
