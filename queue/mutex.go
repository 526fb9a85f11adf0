package queue

import (
	"context"

	"github.com/baton-go/baton"
)

// Mutex is a reentrant exclusive lock on a queue engine: the first entry of
// the queue holds it; each waiter watches its predecessor.
type Mutex struct{ r recipe }

var _ baton.Locker = (*Mutex)(nil)

// MutexOptions configure NewMutex, NewRWMutex, NewSemaphore and
// NewElection. It has no fields yet: the zero value is the only
// configuration, and the parameter keeps the constructors' signatures
// stable when one is added.
type MutexOptions struct{}

// NewMutex returns the mutex called name on b. name is validated with
// baton.ValidateName; dir is the name the backend maps to its directory.
func NewMutex(b Backend, name string, opts MutexOptions) (*Mutex, error) {
	n, err := baton.ValidateName(name)
	if err != nil {
		return nil, err
	}
	m := &Mutex{r: recipe{b: b, name: n, dir: n, kind: KindMutex, rule: first}}
	m.r.key = m
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
