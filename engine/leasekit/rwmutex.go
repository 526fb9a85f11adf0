package leasekit

import (
	"context"
	"fmt"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/engine"
)

// RWMutex is a read/write lock. Its API is queuekit.RWMutex's, so code and
// the CLI use every engine alike. Which waiter goes first is the store's
// rule, and every lease engine follows the same one: waiters are served
// in the order they queued, a reader is never granted while a writer
// holds or waits ahead of it (writers are not starved), and a writer never
// overtakes a reader queued before it.
//
// Reentrancy: a context derived from a read lease re-enters the read side;
// one derived from the write lease re-enters the write side, and may also
// take the read side (it gets the write lease back with one more hold). A
// read lease asking for the write side fails with baton.ErrUpgradeRefused:
// two readers upgrading would each wait for the other forever. Release
// the read side, then acquire the write side, and re-validate what you
// read.
type RWMutex struct {
	e           *Engine
	name        string
	read, write any // the store's per-lock state of each side (Binder)
}

var _ baton.Locker = (*RWMutex)(nil)

// rwKey identifies one side of an RWMutex for reentrancy.
type rwKey struct {
	rw    *RWMutex
	write bool
}

// RWMutex returns the read/write lock called name. An invalid name fails
// with an error wrapping baton.ErrInvalidName.
func (e *Engine) RWMutex(name string) (*RWMutex, error) {
	n, err := engine.ValidateName(name)
	if err != nil {
		return nil, fmt.Errorf("%s: RWMutex: %w", e.Pkg, err)
	}
	return &RWMutex{e: e, name: n, read: e.bind(n, KindRead), write: e.bind(n, KindWrite)}, nil
}

// Name returns the normalised lock name.
func (rw *RWMutex) Name() string { return rw.name }

// RLock blocks until the read side is granted or ctx ends.
func (rw *RWMutex) RLock(ctx context.Context) (*baton.Lease, error) { return rw.rlock(ctx, true) }

// TryRLock makes one attempt at the read side; baton.ErrNotAcquired when
// a writer holds or waits.
func (rw *RWMutex) TryRLock(ctx context.Context) (*baton.Lease, error) { return rw.rlock(ctx, false) }

// Lock blocks until the write side is granted or ctx ends.
func (rw *RWMutex) Lock(ctx context.Context) (*baton.Lease, error) { return rw.lock(ctx, true) }

// TryLock makes one attempt at the write side; baton.ErrNotAcquired when
// anyone holds or an earlier writer waits.
func (rw *RWMutex) TryLock(ctx context.Context) (*baton.Lease, error) { return rw.lock(ctx, false) }

// RLocker returns the read side as a baton.Locker.
func (rw *RWMutex) RLocker() baton.Locker { return readSide{rw} }

type readSide struct{ rw *RWMutex }

func (r readSide) Lock(ctx context.Context) (*baton.Lease, error)    { return r.rw.RLock(ctx) }
func (r readSide) TryLock(ctx context.Context) (*baton.Lease, error) { return r.rw.TryRLock(ctx) }

func (rw *RWMutex) rlock(ctx context.Context, wait bool) (*baton.Lease, error) {
	// The writer may read: hand it its own lease with one more hold.
	if l, err := engine.Reenter(ctx, rwKey{rw, true}); l != nil || err != nil {
		return l, err
	}
	return rw.e.Acquire(ctx, rwKey{rw, false}, Request{Name: rw.name, Kind: KindRead, Wait: wait, Bound: rw.read})
}

func (rw *RWMutex) lock(ctx context.Context, wait bool) (*baton.Lease, error) {
	if _, ok := engine.Holding(ctx, rwKey{rw, false}); ok {
		return nil, fmt.Errorf("%s: %s %q: %w", rw.e.Pkg, KindWrite, rw.name, baton.ErrUpgradeRefused)
	}
	return rw.e.Acquire(ctx, rwKey{rw, true}, Request{Name: rw.name, Kind: KindWrite, Wait: wait, Bound: rw.write})
}
