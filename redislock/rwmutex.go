package redislock

import (
	"context"
	"fmt"

	"github.com/baton-go/baton"
)

// RWMutex is a read/write lock. The writer is a hash key like a Mutex's;
// readers are members "<owner>:<token>" of a sorted set scored by their
// expiry on the server's clock (milliseconds), so a dead reader's hold
// expires by itself while the others are renewed. Writers are not starved:
// a waiting writer records its intent in a second sorted set, and no new
// reader is granted while a writer waits ahead of it; readers and writers
// are granted in the order they queued (see the scripts: a reader never
// overtakes a queued writer, a writer never overtakes a queued reader).
//
// A context derived from a read lease of the same RWMutex is refused the
// write side (baton.ErrUpgradeRefused): two readers upgrading would
// deadlock. A writer asking for the read side re-enters its write lease.
type RWMutex struct {
	c    *Client
	name string
	k    keys
	// rkey and wkey identify the two sides for reentrancy.
	rkey, wkey *byte
}

// RWMutex returns the read/write lock called name.
func (c *Client) RWMutex(name string) (*RWMutex, error) {
	n, err := baton.ValidateName(name)
	if err != nil {
		return nil, fmt.Errorf("redislock: RWMutex: %w", err)
	}
	return &RWMutex{c: c, name: n, k: c.keysOf(n), rkey: new(byte), wkey: new(byte)}, nil
}

// Name returns the normalised lock name.
func (rw *RWMutex) Name() string { return rw.name }

func (rw *RWMutex) spec(read bool) *spec {
	b := rw.k.base
	s := &spec{
		name:   rw.name,
		script: acquireWrite,
		keys:   []string{b + sfxRWWrite, b + sfxRWReaders, b + sfxRWQueue, b + sfxRWOrder, b + sfxRWSeq, rw.k.counter},
		wake:   rw.k.wake,
		queued: true,
	}
	if read {
		s.recipe, s.key, s.script = "read", rw.rkey, acquireRead
		s.zset, s.zsetKey, s.waiterPrefix = true, 1, "r:"
	} else {
		s.recipe, s.key, s.waiterPrefix = "write", rw.wkey, "w:"
	}
	return s
}

// RLock blocks until the read side is granted or ctx ends.
func (rw *RWMutex) RLock(ctx context.Context) (*baton.Lease, error) { return rw.rlock(ctx, true) }

// TryRLock makes one attempt at the read side: baton.ErrNotAcquired when
// a writer holds the lock or waits for it.
func (rw *RWMutex) TryRLock(ctx context.Context) (*baton.Lease, error) { return rw.rlock(ctx, false) }

// Lock blocks until the write side is granted or ctx ends.
func (rw *RWMutex) Lock(ctx context.Context) (*baton.Lease, error) { return rw.lock(ctx, true) }

// TryLock makes one attempt at the write side.
func (rw *RWMutex) TryLock(ctx context.Context) (*baton.Lease, error) { return rw.lock(ctx, false) }

// RLocker returns the read side as a baton.Locker.
func (rw *RWMutex) RLocker() baton.Locker { return readSide{rw} }

type readSide struct{ rw *RWMutex }

func (r readSide) Lock(ctx context.Context) (*baton.Lease, error)    { return r.rw.RLock(ctx) }
func (r readSide) TryLock(ctx context.Context) (*baton.Lease, error) { return r.rw.TryRLock(ctx) }

func (rw *RWMutex) rlock(ctx context.Context, wait bool) (*baton.Lease, error) {
	// A writer reading its own data re-enters its write lease.
	if l, err := baton.Reenter(ctx, rw.wkey); l != nil || err != nil {
		return l, err
	}
	return rw.c.acquire(ctx, rw.spec(true), wait, 0)
}

func (rw *RWMutex) lock(ctx context.Context, wait bool) (*baton.Lease, error) {
	if _, ok := baton.Holding(ctx, rw.rkey); ok {
		return nil, fmt.Errorf("redislock: acquire %q for writing: %w", rw.name, baton.ErrUpgradeRefused)
	}
	return rw.c.acquire(ctx, rw.spec(false), wait, 0)
}
