package queuekit

import (
	"context"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/clock"
	"github.com/baton-go/baton/engine"
)

// Mutex is a reentrant exclusive lock on a queue engine: the first entry of
// the queue holds it; each waiter watches its predecessor.
type Mutex struct{ r recipe }

var _ baton.Locker = (*Mutex)(nil)

// MutexOptions configure NewMutex, NewRWMutex, NewSemaphore and
// NewElection. The zero value observes nothing and times on the real
// clock.
type MutexOptions struct {
	// Observer, if set, is told of every acquire (EventAcquireStarted,
	// EventAcquireRetry with the entries ahead, EventGranted or
	// EventAcquireFailed) and, through the lease, of the grant's
	// suspension, loss and release. The events are built only when it is
	// set: nil costs one comparison per acquire. A semaphore's internal
	// guard mutex is not reported; its wait counts in the permit's Wait.
	Observer baton.Observer
	// Clock times the events (Event.Time, Wait); nil means clock.Real.
	// The in-memory engine passes its server's clock, so that waits are
	// measured in the test's virtual time.
	Clock clock.Clock
}

// NewMutex returns the mutex called name on b. name is validated with
// engine.ValidateName; dir is the name the backend maps to its directory.
func NewMutex(b Backend, name string, opts MutexOptions) (*Mutex, error) {
	n, err := engine.ValidateName(name)
	if err != nil {
		return nil, err
	}
	m := &Mutex{r: recipe{b: b, name: n, dir: n, kind: KindMutex, rule: first, before: true}}
	m.r.key = m
	m.r.observe(opts, "mutex")
	return m, nil
}

// Name returns the normalised lock name.
func (m *Mutex) Name() string { return m.r.name }

// Lock blocks until the mutex is granted or ctx ends (see baton.Locker).
func (m *Mutex) Lock(ctx context.Context) (*baton.Lease, error) { return m.r.acquire(ctx, true) }

// TryLock makes one attempt and returns baton.ErrNotAcquired if the mutex is
// held by another owner.
func (m *Mutex) TryLock(ctx context.Context) (*baton.Lease, error) { return m.r.acquire(ctx, false) }

// first grants the head of the queue and makes everyone else wait for
// their predecessor, so one release wakes exactly one waiter.
func first(s Snapshot) (int, bool) {
	if s.Own == 0 {
		return 0, true
	}
	return s.Own - 1, false
}
