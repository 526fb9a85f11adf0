package fence

import (
	"context"

	"github.com/baton-go/baton"
)

// rejected tells o of a write refused as stale and returns se. It runs
// only on a rejection, never on an accepted write. The event's Name is the
// lock name of the lease ctx derives from, when the caller passed its
// lease's context (as it should: the write then also stops when the lease
// ends).
func rejected(ctx context.Context, o baton.Observer, se *StaleError) error {
	if o != nil {
		Observe(ctx, o, se)
	}
	return se
}

// Observe tells o of a write refused as stale (baton.EventStaleRejected,
// engine "fence"), for fences built outside this package (redisfence, a
// script that checks Accepts) so that every refusal is reported alike.
// Name is the lock name of the lease ctx derives from, if any. A nil o
// does nothing.
func Observe(ctx context.Context, o baton.Observer, se *StaleError) {
	if o == nil || se == nil {
		return
	}
	e := baton.Event{
		Kind: baton.EventStaleRejected, Engine: "fence", Resource: se.Resource,
		Token: se.Token, Owner: se.Owner, StoredToken: se.StoredToken, StoredOwner: se.StoredOwner,
	}
	if l, ok := baton.LeaseFrom(ctx); ok {
		e.Name = l.Name()
	}
	baton.Emit(ctx, o, e)
}
