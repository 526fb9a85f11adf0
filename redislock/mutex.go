package redislock

import (
	"context"
	"fmt"
	"time"

	"github.com/baton-go/baton"
)

// Mutex is an exclusive lock: one hash key "<prefix>:{<name>}:mutex"
// holding the grant's owner and token, with the lease time as its expiry.
// It implements baton.Locker. Locking it again with a context derived from
// one of its own leases re-enters (see the baton package doc).
type Mutex struct {
	c    *Client
	name string
	k    keys
}

var _ baton.Locker = (*Mutex)(nil)

// Mutex returns the exclusive lock called name. An invalid name fails with
// an error wrapping baton.ErrInvalidName.
func (c *Client) Mutex(name string) (*Mutex, error) {
	n, err := baton.ValidateName(name)
	if err != nil {
		return nil, fmt.Errorf("redislock: Mutex: %w", err)
	}
	return &Mutex{c: c, name: n, k: c.keysOf(n)}, nil
}

// Name returns the normalised lock name.
func (m *Mutex) Name() string { return m.name }

// Key returns the Redis key of the lock (a hash: owner, token).
func (m *Mutex) Key() string { return m.k.base + sfxMutex }

func (m *Mutex) spec() *spec {
	return &spec{
		recipe: "mutex", name: m.name, key: m,
		script:  acquireHash,
		keys:    []string{m.k.base + sfxMutex, m.k.base + sfxMutexWaiters, m.k.counter},
		waiters: m.k.base + sfxMutexWaiters,
		wake:    m.k.wake,
	}
}

// Lock blocks until the lock is granted or ctx ends.
func (m *Mutex) Lock(ctx context.Context) (*baton.Lease, error) {
	return m.c.acquire(ctx, m.spec(), true, 0)
}

// TryLock makes one attempt; baton.ErrNotAcquired when another owner holds
// the lock.
func (m *Mutex) TryLock(ctx context.Context) (*baton.Lease, error) {
	return m.c.acquire(ctx, m.spec(), false, 0)
}

// LockFor is Lock with a fixed lease time: the key is never renewed and
// expires leaseTime after the grant on the server's clock; the lease is
// Lost shortly before that (Redisson's lock(leaseTime)). Use it when the
// work has a known bound and must not hold the lock longer whatever
// happens to this process.
func (m *Mutex) LockFor(ctx context.Context, leaseTime time.Duration) (*baton.Lease, error) {
	if err := checkLeaseTime(leaseTime); err != nil {
		return nil, err
	}
	return m.c.acquire(ctx, m.spec(), true, leaseTime)
}

// TryLockFor is TryLock with a fixed lease time (see LockFor).
func (m *Mutex) TryLockFor(ctx context.Context, leaseTime time.Duration) (*baton.Lease, error) {
	if err := checkLeaseTime(leaseTime); err != nil {
		return nil, err
	}
	return m.c.acquire(ctx, m.spec(), false, leaseTime)
}

func checkLeaseTime(d time.Duration) error {
	if d < 300*time.Millisecond || d%time.Millisecond != 0 {
		return fmt.Errorf("%w: redislock: lease time %v, want ≥ 300ms in whole milliseconds", baton.ErrInvalidOption, d)
	}
	return nil
}
