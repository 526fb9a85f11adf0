package fence

import (
	"context"
	"errors"
	"fmt"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/engine"
)

// rejected names se's lock from ctx, tells o of the refused write and
// returns se. It runs only on a rejection, never on an accepted write.
func rejected(ctx context.Context, o baton.Observer, se *StaleError) error {
	Observe(ctx, o, se)
	return se
}

// Observe fills se.Name, when empty, with the lock name of ctx (LockName)
// and tells o of the write refused as stale (baton.EventStaleRejected,
// engine "fence", with Name, Resource, both tokens and both owners). Fences
// built outside this package (redisfence, a script that checks Accepts)
// call it on every *StaleError they return, so that every refusal is named
// and reported alike. A nil o reports nothing; se is named all the same.
func Observe(ctx context.Context, o baton.Observer, se *StaleError) {
	if se == nil {
		return
	}
	if se.Name == "" {
		se.Name = LockName(ctx)
	}
	if o == nil {
		return
	}
	engine.Emit(ctx, o, baton.Event{
		Kind: baton.EventStaleRejected, Engine: "fence", Name: se.Name, Resource: se.Resource,
		Token: se.Token, Owner: se.Owner, StoredToken: se.StoredToken, StoredOwner: se.StoredOwner,
	})
}

type lockNameKey struct{}

// WithLockName returns a copy of ctx that names the lock its writes are
// made under, for writes whose context is not the lease's: a request's or
// a worker's context, or tokens minted outside baton. A fence that refuses
// such a write puts name in the *StaleError and in the event it reports,
// so the refusal leads back to the grant. The lease's own context (and
// every context derived from it) needs no such help: its lease names the
// lock.
func WithLockName(ctx context.Context, name string) context.Context {
	return context.WithValue(ctx, lockNameKey{}, name)
}

// LockName returns the lock name of writes made with ctx: the name
// WithLockName gave it, else the name of the lease ctx derives from
// (baton.LeaseFrom), else "".
func LockName(ctx context.Context) string {
	if n, ok := ctx.Value(lockNameKey{}).(string); ok {
		return n
	}
	if l, ok := baton.LeaseFrom(ctx); ok {
		return l.Name()
	}
	return ""
}

// WithCause returns err with the cause of ctx's end added, when ctx has
// ended with a cause of its own and err is not a *StaleError: a lease's
// context ends with a cause wrapping baton.ErrLost when the lease is lost
// and baton.ErrReleased after its release. A write made with the lease's
// context is then cut short before or while it reaches the fence (the
// database driver reports only "context canceled"), and the error WithCause
// returns lets the caller tell that case (errors.Is(err, baton.ErrLost):
// this process learnt of the loss in time) from a write the fence refused
// (errors.Is(err, baton.ErrStaleToken)). A context cancelled without a
// cause, and a nil err, are returned as they are.
//
// Every fence of this package and redisfence applies it to the errors of
// its writes; fences built elsewhere can do the same.
func WithCause(ctx context.Context, err error) error {
	if err == nil || ctx.Err() == nil {
		return err
	}
	cause := context.Cause(ctx)
	var se *StaleError
	if cause == nil || cause == ctx.Err() || errors.Is(err, cause) || errors.As(err, &se) {
		return err
	}
	return fmt.Errorf("%w (the write's context ended: %w)", err, cause)
}
