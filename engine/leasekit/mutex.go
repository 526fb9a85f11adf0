package leasekit

import (
	"context"
	"fmt"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/engine"
)

// Mutex is an exclusive lock. It implements baton.Locker. Locking it
// again with a context derived from one of its own leases re-enters (see
// the baton package doc).
type Mutex struct {
	e     *Engine
	name  string
	bound any // the store's per-lock state (Binder)
}

var _ baton.Locker = (*Mutex)(nil)

// Mutex returns the exclusive lock called name. An invalid name fails with
// an error wrapping baton.ErrInvalidName.
func (e *Engine) Mutex(name string) (*Mutex, error) {
	n, err := engine.ValidateName(name)
	if err != nil {
		return nil, fmt.Errorf("%s: Mutex: %w", e.Pkg, err)
	}
	return &Mutex{e: e, name: n, bound: e.bind(n, KindMutex)}, nil
}

// Name returns the normalised lock name.
func (m *Mutex) Name() string { return m.name }

// Lock blocks until the lock is granted or ctx ends.
func (m *Mutex) Lock(ctx context.Context) (*baton.Lease, error) { return m.lock(ctx, true, 0) }

// TryLock makes one attempt; baton.ErrNotAcquired when another owner holds
// the lock.
func (m *Mutex) TryLock(ctx context.Context) (*baton.Lease, error) { return m.lock(ctx, false, 0) }

// LockFor is Lock with a fixed lease time: the lock is never renewed and
// expires leaseTime after the grant on the server's clock; the lease is
// Lost shortly before that (Redisson's lock(leaseTime)). Use it when the
// work has a known bound and must not hold the lock longer whatever
// happens to this process.
func (m *Mutex) LockFor(ctx context.Context, leaseTime time.Duration) (*baton.Lease, error) {
	if err := checkLeaseTime(m.e.Pkg, leaseTime, m.e.Millis); err != nil {
		return nil, err
	}
	return m.lock(ctx, true, leaseTime)
}

// TryLockFor is TryLock with a fixed lease time (see LockFor).
func (m *Mutex) TryLockFor(ctx context.Context, leaseTime time.Duration) (*baton.Lease, error) {
	if err := checkLeaseTime(m.e.Pkg, leaseTime, m.e.Millis); err != nil {
		return nil, err
	}
	return m.lock(ctx, false, leaseTime)
}

func (m *Mutex) lock(ctx context.Context, wait bool, fixed time.Duration) (*baton.Lease, error) {
	return m.e.Acquire(ctx, m, Request{Name: m.name, Kind: KindMutex, Wait: wait, Fixed: fixed, Bound: m.bound})
}
