package baton

import "context"

// Mutex is an exclusive lock, the same type on every engine. Get it from
// Client.Mutex.
type Mutex struct {
	name string
	l    Locker
}

// Name returns the lock's name as given.
func (m *Mutex) Name() string { return m.name }

// Lock blocks until the lock is granted or ctx is done (see Locker).
func (m *Mutex) Lock(ctx context.Context) (*Lease, error) {
	return m.l.Lock(ctx)
}

// TryLock makes one attempt; it returns an error wrapping ErrNotAcquired
// when another owner holds the lock.
func (m *Mutex) TryLock(ctx context.Context) (*Lease, error) {
	return m.l.TryLock(ctx)
}

type rwLocker interface {
	Locker
	RLock(ctx context.Context) (*Lease, error)
	TryRLock(ctx context.Context) (*Lease, error)
}

// RWMutex is a read/write lock: many readers or one writer. Writers are
// served in arrival order with readers, so a stream of readers cannot
// starve a writer. A read lease's token orders it after every earlier
// write; only a write lease's token is exclusive.
type RWMutex struct {
	name string
	rw   rwLocker
}

// Name returns the lock's name as given.
func (rw *RWMutex) Name() string { return rw.name }

// Lock takes the write side.
func (rw *RWMutex) Lock(ctx context.Context) (*Lease, error) {
	return rw.rw.Lock(ctx)
}

// TryLock makes one attempt at the write side.
func (rw *RWMutex) TryLock(ctx context.Context) (*Lease, error) {
	return rw.rw.TryLock(ctx)
}

// RLock takes the read side.
func (rw *RWMutex) RLock(ctx context.Context) (*Lease, error) {
	return rw.rw.RLock(ctx)
}

// TryRLock makes one attempt at the read side.
func (rw *RWMutex) TryRLock(ctx context.Context) (*Lease, error) {
	return rw.rw.TryRLock(ctx)
}

type semLocker interface {
	Acquire(ctx context.Context) (*Lease, error)
	TryAcquire(ctx context.Context) (*Lease, error)
}

// Semaphore hands out at most N permits at once. Permit tokens increase
// per name, but N holders hold at once: fence per permit, not per name.
type Semaphore struct {
	name string
	n    int
	s    semLocker
}

// Name returns the semaphore's name as given.
func (s *Semaphore) Name() string { return s.name }

// Permits returns N.
func (s *Semaphore) Permits() int { return s.n }

// Acquire blocks until a permit is granted or ctx is done.
func (s *Semaphore) Acquire(ctx context.Context) (*Lease, error) {
	return s.s.Acquire(ctx)
}

// TryAcquire makes one attempt; it returns an error wrapping
// ErrNotAcquired when all N permits are held.
func (s *Semaphore) TryAcquire(ctx context.Context) (*Lease, error) {
	return s.s.TryAcquire(ctx)
}

// Election is a leader election: one leader at a time, each with an
// epoch greater than every earlier leader's.
type Election struct {
	name string
	e    Elector
}

// Name returns the election's name as given.
func (e *Election) Name() string { return e.name }

// Campaign blocks until this candidate leads or ctx ends, with DefaultID
// as its ID.
func (e *Election) Campaign(ctx context.Context) (*Leader, error) {
	return e.e.Campaign(ctx)
}

// CampaignAs is Campaign with the candidate ID id.
func (e *Election) CampaignAs(ctx context.Context, id string) (*Leader, error) {
	return e.e.CampaignAs(ctx, id)
}

// Leader returns the current leader, or an error wrapping ErrNoLeader.
func (e *Election) Leader(ctx context.Context) (Candidate, error) {
	return e.e.Leader(ctx)
}

// Observe sends the leader each time it changes (an empty Candidate while
// there is none) until ctx ends; then it closes the channel.
func (e *Election) Observe(ctx context.Context) (<-chan Candidate, error) {
	return e.e.Observe(ctx)
}
