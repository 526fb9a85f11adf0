package queue

import (
	"context"
	"fmt"
	"time"

	"github.com/baton-go/baton"
)

// Semaphore hands out up to N permits, with Curator's
// InterProcessSemaphoreV2 protocol and layout so Java and Go clients share
// permits: a short guard mutex under "<name>/locks" admits one acquirer at a
// time; it creates its lease entry under "<name>/leases" and is granted as
// soon as the directory holds at most N leases, waiting for any change of
// the directory otherwise; then it releases the guard. Only the guard's
// holder watches the lease directory, and the guard itself is a fair
// mutex, so a released permit wakes one client, not the herd.
//
// A permit comes back when its holder releases it or its session dies.
// Curator does not store N: every client must be configured with the same
// N. Permits are not exclusive, so permit holders may share a token.
// Permits are not reentrant: each Acquire takes one more permit.
type Semaphore struct {
	guard  recipe
	leases recipe
	n      int
}

// GuardReleaseTimeout bounds the release of the guard mutex after an
// acquire, so an unreachable server cannot hold the acquire past it; the
// guard's entry then belongs to the session's cleanup.
const GuardReleaseTimeout = 5 * time.Second

// NewSemaphore returns the semaphore called name with n permits on b.
func NewSemaphore(b Backend, name string, n int, opts MutexOptions) (*Semaphore, error) {
	nm, err := baton.ValidateName(name)
	if err != nil {
		return nil, err
	}
	if n < 1 {
		return nil, fmt.Errorf("%w: semaphore %q needs at least one permit, got %d", baton.ErrInvalidOption, nm, n)
	}
	s := &Semaphore{n: n}
	s.guard = recipe{b: b, name: nm, dir: nm + "/locks", kind: KindMutex, rule: first, hooks: opts.Hooks, handOff: true}
	s.leases = recipe{b: b, name: nm, dir: nm + "/leases", kind: KindLease, rule: s.rule, hooks: opts.Hooks}
	return s, nil
}

// Name returns the normalised semaphore name.
func (s *Semaphore) Name() string { return s.leases.name }

// Permits returns N.
func (s *Semaphore) Permits() int { return s.n }

// Acquire blocks until a permit is granted or ctx ends.
func (s *Semaphore) Acquire(ctx context.Context) (*baton.Lease, error) { return s.acquire(ctx, true) }

// TryAcquire makes one attempt; it returns baton.ErrNotAcquired when all
// permits are taken. It may still wait for the guard mutex, which is held
// only for the short time of another acquire.
func (s *Semaphore) TryAcquire(ctx context.Context) (*baton.Lease, error) {
	return s.acquire(ctx, false)
}

// Lock and TryLock make the semaphore a baton.Locker (one permit each).
func (s *Semaphore) Lock(ctx context.Context) (*baton.Lease, error)    { return s.Acquire(ctx) }
func (s *Semaphore) TryLock(ctx context.Context) (*baton.Lease, error) { return s.TryAcquire(ctx) }

var _ baton.Locker = (*Semaphore)(nil)

func (s *Semaphore) acquire(ctx context.Context, wait bool) (*baton.Lease, error) {
	g, err := s.guard.acquire(ctx, true)
	if err != nil {
		return nil, err
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), GuardReleaseTimeout)
		defer cancel()
		_ = g.Release(rctx) // handOff: a failed delete goes to the session's cleanup
	}()
	return s.leases.acquire(ctx, wait)
}

// rule grants while the lease directory holds at most N entries, counting
// the caller's own; otherwise the caller waits for any change.
func (s *Semaphore) rule(snap Snapshot) (int, bool) {
	if len(snap.Entries) <= s.n {
		return 0, true
	}
	return -1, false
}
