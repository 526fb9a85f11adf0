package queuekit

import (
	"context"
	"fmt"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/engine"
)

// RWMutex is a fair read/write lock on a queue engine (Curator's
// InterProcessReadWriteLock layout: "__READ__" and "__WRIT__" entries in
// one directory, ordered by sequence).
//
// Readers share: a reader is granted when no writer is queued before it,
// and waits for the nearest earlier writer. A writer is granted when it is
// first in the queue and waits for its predecessor. A reader never
// overtakes a queued writer (R41 and R42 read together, W43 waits for both,
// R44 waits for W43), so writers do not starve.
//
// Tokens: every grant gets one; a writer's token exceeds the token of every
// earlier grant of either kind. Readers granted together may share a token:
// they are not exclusive.
//
// Reentrancy: a context derived from a read lease re-enters the read side;
// one derived from the write lease re-enters the write side, and may also
// take the read side (it gets the write lease back with one more hold,
// since the writer already excludes everyone). A read lease asking for the
// write side fails with baton.ErrUpgradeRefused: two readers upgrading
// would each wait for the other forever. Release the read side, then
// acquire the write side, and re-validate what you read: it may have
// changed in between.
type RWMutex struct {
	read, write recipe
}

type rwKey struct {
	rw    *RWMutex
	write bool
}

// NewRWMutex returns the read/write lock called name on b.
func NewRWMutex(b Backend, name string, opts MutexOptions) (*RWMutex, error) {
	n, err := engine.ValidateName(name)
	if err != nil {
		return nil, err
	}
	rw := &RWMutex{}
	rw.read = recipe{b: b, name: n, dir: n, kind: KindRead, rule: readRule, before: true, key: rwKey{rw, false}}
	rw.write = recipe{b: b, name: n, dir: n, kind: KindWrite, rule: first, before: true, key: rwKey{rw, true}}
	// The writer may read: a read acquire under the write lease re-enters it.
	rw.read.outer = rw.write.key
	rw.read.observe(opts, "read")
	rw.write.observe(opts, "write")
	return rw, nil
}

// Name returns the normalised lock name.
func (rw *RWMutex) Name() string { return rw.read.name }

// RLock blocks until the read side is granted or ctx ends.
func (rw *RWMutex) RLock(ctx context.Context) (*baton.Lease, error) { return rw.rlock(ctx, true) }

// TryRLock makes one attempt at the read side.
func (rw *RWMutex) TryRLock(ctx context.Context) (*baton.Lease, error) { return rw.rlock(ctx, false) }

// Lock blocks until the write side is granted or ctx ends.
func (rw *RWMutex) Lock(ctx context.Context) (*baton.Lease, error) { return rw.lock(ctx, true) }

// TryLock makes one attempt at the write side.
func (rw *RWMutex) TryLock(ctx context.Context) (*baton.Lease, error) { return rw.lock(ctx, false) }

// RLocker returns the read side as a baton.Locker.
func (rw *RWMutex) RLocker() baton.Locker { return readSide{rw} }

var _ baton.Locker = (*RWMutex)(nil)

type readSide struct{ rw *RWMutex }

func (r readSide) Lock(ctx context.Context) (*baton.Lease, error)    { return r.rw.RLock(ctx) }
func (r readSide) TryLock(ctx context.Context) (*baton.Lease, error) { return r.rw.TryRLock(ctx) }

func (rw *RWMutex) rlock(ctx context.Context, wait bool) (*baton.Lease, error) {
	return rw.read.acquire(ctx, wait)
}

func (rw *RWMutex) lock(ctx context.Context, wait bool) (*baton.Lease, error) {
	if _, ok := engine.Holding(ctx, rw.read.key); ok {
		return nil, fmt.Errorf("baton: acquire %q for writing: %w", rw.write.name, baton.ErrUpgradeRefused)
	}
	return rw.write.acquire(ctx, wait)
}

// readRule grants a reader with no writer before it; otherwise it waits for
// the nearest earlier writer, whose deletion is the next moment the answer
// can change. Any entry that is not a reader counts as a writer: a foreign
// entry in the directory (another recipe or tool on the same name) then
// blocks readers instead of being overlooked.
func readRule(s Snapshot) (int, bool) {
	for i := s.Own - 1; i >= 0; i-- {
		if s.Entries[i].Kind != KindRead {
			return i, false
		}
	}
	return 0, true
}
