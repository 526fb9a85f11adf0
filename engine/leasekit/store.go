package leasekit

import (
	"context"
	"errors"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/engine/leasekit/keeper"
)

// Kind is what an acquire asks for.
type Kind int

// The kinds of acquire. Redlock serves only KindMutex.
const (
	KindMutex  Kind = iota // the exclusive lock of Mutex
	KindRead               // the read side of RWMutex
	KindWrite              // the write side of RWMutex
	KindPermit             // one permit of Semaphore
	KindLeader             // the leadership of Election
)

// String names the kind in error messages.
func (k Kind) String() string {
	switch k {
	case KindMutex:
		return "mutex"
	case KindRead:
		return "read lock"
	case KindWrite:
		return "write lock"
	case KindPermit:
		return "semaphore"
	case KindLeader:
		return "election"
	}
	return "lock"
}

// label is the kind as baton.Event.Recipe names it.
func (k Kind) label() string {
	switch k {
	case KindRead:
		return "read"
	case KindWrite:
		return "write"
	case KindPermit:
		return "semaphore"
	case KindLeader:
		return "election"
	}
	return "mutex"
}

// Request is one acquire, as the engine's store sees it.
type Request struct {
	Name  string        // the normalised lock name
	Kind  Kind          // what is asked for
	Wait  bool          // false: one attempt (TryLock)
	Fixed time.Duration // > 0: a fixed lease time, never renewed (LockFor)
	N     int           // KindPermit: the semaphore's N
	ID    string        // KindLeader: the candidate ID

	// Bound is what the store's Binder returned for this lock object
	// (nil without a Binder).
	Bound any

	// Endless: the acquire's context never ends (its Done is nil), so an
	// attempt's context ends only at the engine's AttemptTimeout or at
	// Close. A store that must not cut a statement at the caller's end
	// (package sqllock) may then run it on the caller's goroutine.
	Endless bool

	// Seen, set for KindPermit, is where the store reports the N that
	// other holders (or waiters) stored, when it learns them; complete
	// means held lists every live one (see Semaphore).
	Seen func(held []Permits, complete bool)
}

// Permits is the N one holder or waiter of a semaphore stored.
type Permits struct {
	ID    string // identifies what was judged: each ID is reported once
	Lease string // names it in the report (a row, a key)
	N     int    // the N stored; 0 when unknown (not judged)
}

// Result is what one attempt did.
type Result struct {
	Granted bool
	Token   uint64    // the raw token (TokenFloor not added), when granted
	Sent    time.Time // when the attempt was sent: the lease's deadline counts from it
	// Ref is the grant, for the keeper; after an error, what the attempt
	// may have taken (Attempts.Forget frees it).
	Ref keeper.Ref
	// Hint, when > 0, is how soon the lock may become free (the holder's
	// expiry as the server reports it): the next attempt comes then if it
	// is sooner than the backoff step.
	Hint time.Duration
	// Again asks for the next attempt at once, without a backoff step
	// (a waiter that has just set up its wake-up source).
	Again bool
	// Poll, when > 0, lengthens the sleep before the next attempt to at
	// least Poll (Hint still cuts it short): a store that wakes its
	// waiters one at a time polls only as a safety net for a lost
	// wake-up, so that the waiters of one lock together poll at a rate
	// that does not grow with their number.
	Poll time.Duration
	// Reached, on an error, is the time up to which the server was known
	// to be reachable though the attempt failed (a busy SQLite file, a
	// deadlock victim, a Redlock majority that answered): a waiter is then
	// contended, not cut off, and its session bound restarts there.
	Reached time.Time
}

// Attempts makes the attempts of one acquire. The store returns a fresh
// one per acquire, so it may keep state across attempts (a waiter's
// intent, its identity).
type Attempts interface {
	// Try makes attempt n (0 for the first; it counts every attempt of
	// this acquire). A refused attempt returns a Result that is not
	// Granted and a nil error; an error means the outcome is unknown. An
	// error that retrying cannot fix is marked with Permanent.
	Try(ctx context.Context, n int) (Result, error)
	// Forget frees, owner-checked and in the background (keeper.Abandon),
	// whatever an attempt that failed may hold: res is that attempt's
	// Result (a grant the keeper refused to hold is passed too).
	Forget(res Result)
	// End runs once when the acquire returns, granted or not, on the
	// acquiring goroutine: the store drops (or, after a grant, removes)
	// what the wait kept on the server.
	End(ctx context.Context, granted bool)
}

// Store is what a lease engine implements for the recipes: one call that
// begins an acquire. Extra powers are optional interfaces, found by type
// assertion: Preparer (on the Store), Watcher (on the Store and on
// Attempts), Leaders (on the Store, for Election).
type Store interface {
	Begin(req *Request) Attempts
}

// Preparer is a Store with work to do before its first acquire (a SQL
// schema to create). Prepare runs before every acquire and must be cheap
// once done; an error fails the acquire with baton.ErrUnavailable.
type Preparer interface {
	Prepare(ctx context.Context) error
}

// Watcher is a source of wake-ups: Watch returns a channel closed when
// name may have been released (pub/sub, LISTEN/NOTIFY, a release in this
// process), and a func to call when no longer watching. A Store that
// implements it wakes Election.Observe; without it Observe polls.
type Watcher interface {
	Watch(name string) (<-chan struct{}, func())
}

// AttemptWatcher is Attempts with a wake-up source: the loop calls Watch
// before attempt n and keeps the channel until attempt n+1 has set up its
// own, so a release during the sleep is never missed. A nil channel never
// wakes.
type AttemptWatcher interface {
	Watch(n int) (<-chan struct{}, func())
}

// Leaders is a Store that can read an election's current leader.
type Leaders interface {
	// Leader returns the current leader of name, or an error wrapping
	// baton.ErrNoLeader.
	Leader(ctx context.Context, name string) (baton.Candidate, error)
}

// permanent marks an attempt's error as final.
type permanent struct{ err error }

func (p permanent) Error() string { return p.err.Error() }
func (p permanent) Unwrap() error { return p.err }

// Permanent marks err as an error retrying cannot fix (a Redis key of the
// wrong type, a grant not replicated): the acquire returns it at once.
func Permanent(err error) error { return permanent{err} }

func isPermanent(err error) bool {
	var p permanent
	return errors.As(err, &p)
}

// Binder is implemented by stores that prepare per-lock state once, when
// a lock object (Mutex, each side of an RWMutex, Election) is made,
// instead of on every acquire: Redis builds its keys there, which saved
// eight allocations of an uncontended lock+unlock. What Bind returns
// comes back in Request.Bound; it is shared by every acquire of the
// object, concurrent ones included, so it must not be written to.
type Binder interface {
	Bind(name string, kind Kind) any
}

// bind returns the store's per-lock state for name and kind, nil when the
// store is no Binder.
func (e *Engine) bind(name string, kind Kind) any {
	if b, ok := e.Store.(Binder); ok {
		return b.Bind(name, kind)
	}
	return nil
}
