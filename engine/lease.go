package engine

import (
	"context"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/internal/bridge"
)

// Grant describes a successful acquire to NewLease. Engines fill it in.
type Grant struct {
	Name   string // normalised lock name
	Engine string // "zk", "etcd", "redis", "redlock", "postgres", "mysql", "sqlite"
	Token  uint64 // the fencing token, token floor already added
	Owner  string // identity unique to this grant (entry path, owner value, row owner)
	// Key identifies the lock object for reentrancy; a later acquire on an
	// object with an equal Key and a context derived from this lease
	// re-enters. It must be comparable. Nil disables reentrancy.
	Key any
	// Release removes the remote entry, and only this grant's entry. When
	// it returns an error (unknown outcome) the lease ends Lost and is
	// never released again: the engine removes the entry in the
	// background, exactly, or lets it expire, calling
	// Control.ReleaseFailed before the background removal starts.
	Release func(ctx context.Context) error
	// OnEnd, if set, runs once after the lease became Lost or Released, so
	// the engine can stop whatever watched this lease.
	OnEnd func()

	// Observer, if set, is told of the lease's state changes (Suspended,
	// Resumed, Lost, Released, ReleaseFailed), with Recipe, Session and
	// Acquire copied into each event.
	Observer baton.Observer
	Recipe   string // "mutex", "read", "write", "semaphore", "election"
	Session  string // the engine session, when there is one
	Acquire  uint64 // the acquire's ID (NextAcquireID), pairing grant and end
}

// Control is the engine's side of a lease: it reports suspension, recovery
// and loss. Only the engine that built the lease holds it. The zero
// Control controls nothing and must not be used.
type Control struct{ l *baton.Lease }

// NewLease builds the lease for a grant, in state Held with one hold, and
// the Control through which the engine reports suspension and loss. The
// lease's context carries parent's values (so nested acquires find it) but
// not parent's cancellation: the acquire context bounds the wait, not the
// holding. It allocates once: the lease, its state and its Control are one
// object, and the lease's context is made when it is first asked for.
func NewLease(parent context.Context, g Grant) (*baton.Lease, Control) {
	var obs any
	if g.Observer != nil {
		obs = g.Observer
	}
	l := bridge.NewLease(parent, bridge.Grant{
		Name: g.Name, Engine: g.Engine, Token: g.Token, Owner: g.Owner, Key: g.Key,
		Release: g.Release, OnEnd: g.OnEnd, Observer: obs,
		Recipe: g.Recipe, Session: g.Session, Acquire: g.Acquire,
	}).(*baton.Lease)
	return l, Control{l}
}

// Lease returns the controlled lease.
func (c Control) Lease() *baton.Lease { return c.l }

// Suspend moves a Held lease to Suspended; otherwise it does nothing.
func (c Control) Suspend() { bridge.Suspend(c.l) }

// Resume moves a Suspended lease back to Held; otherwise it does nothing.
// Engines call it only after re-verifying ownership on the same session.
func (c Control) Resume() { bridge.Resume(c.l) }

// Lose ends the lease as Lost with a cause that should wrap
// baton.ErrLost (it is wrapped if it does not). It is a no-op on an ended
// lease and reports whether it ended the lease.
func (c Control) Lose(cause error) bool { return bridge.LoseAhead(c.l, cause, 0) }

// ReleaseFailed ends the lease Lost after its Grant.Release failed with
// err, as baton.Lease.Release does when Release returns. An engine that
// goes on removing the entry in the background calls it first, so the
// holder learns that the lease ended before the removal can let anyone
// else in. It is a no-op on an ended lease and reports whether it ended
// the lease.
func (c Control) ReleaseFailed(err error) bool { return bridge.ReleaseFailed(c.l, err) }

// LoseAhead is Lose for an engine that knows how far ahead of the server
// it declares the loss: lead is how long before the earliest moment the
// server could expire the grant (a lease engine's deadline loss declares
// it DriftMargin early). The lease's EventLost carries it as Lead; 0
// means unknown, and a negative lead is reported as 0.
func (c Control) LoseAhead(cause error, lead time.Duration) bool {
	return bridge.LoseAhead(c.l, cause, lead)
}

// Reenter looks in ctx for a live lease whose Grant.Key equals key (the
// lease itself or one it was nested in). When it finds one it adds a hold
// and returns it. It returns an error wrapping baton.ErrLost when that
// lease was lost, and (nil, nil) when ctx carries no lease of this lock,
// in which case the caller acquires normally.
func Reenter(ctx context.Context, key any) (*baton.Lease, error) {
	l, err := bridge.Reenter(ctx, key)
	return l.(*baton.Lease), err
}

// Holding returns the live lease in ctx whose Grant.Key equals key,
// without adding a hold. Recipes use it to refuse what would deadlock (a
// reader asking for the write side of the same read/write lock).
func Holding(ctx context.Context, key any) (*baton.Lease, bool) {
	l, ok := bridge.Holding(ctx, key)
	return l.(*baton.Lease), ok
}

// NewLeader wraps the lease of a won election. id is the candidate ID the
// leader campaigned with.
func NewLeader(lease *baton.Lease, id string) *baton.Leader {
	return bridge.NewLeader(lease, id).(*baton.Leader)
}
