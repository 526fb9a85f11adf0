package sqllock

import (
	"context"
	"fmt"
	"slices"

	"github.com/baton-go/baton"
)

// RWMutex is a read/write lock on the rows of one name (see recipe.go for
// the layout). Its API is queue.RWMutex's, so code and the CLI use the
// engines alike.
//
// Waiters keep an intent row ("rwait", "wwait") with a ticket, and are
// served in ticket order, as on the queue engines: a reader is granted
// while no writer holds and no writer waits ahead of it; a writer is
// granted when nobody holds and nobody waits ahead of it. A waiting
// writer's intent row is what new readers see and stop at, so a stream of
// readers cannot starve it: readers holding when it arrives finish, it is
// granted, and readers that came after it wait for its release. An intent
// row expires by itself if its waiter dies, so a dead waiter holds the
// others back for at most a TTL.
//
// Tokens: every grant takes its own token from the database's sequence
// under the name's guard row, so every grant's token exceeds every
// earlier grant's, readers included.
//
// Reentrancy: a context derived from a read lease re-enters the read side;
// one derived from the write lease re-enters the write side, and may also
// take the read side (it gets the write lease back with one more hold). A
// read lease asking for the write side fails with baton.ErrUpgradeRefused:
// two readers upgrading would each wait for the other forever. Release the
// read side, then acquire the write side, and re-validate what you read.
type RWMutex struct {
	c           *Client
	name        string
	read, write recipe
}

type rwKey struct {
	rw    *RWMutex
	write bool
}

var _ baton.Locker = (*RWMutex)(nil)

// RWMutex returns the read/write lock called name. An invalid name fails
// with an error wrapping baton.ErrInvalidName.
func (c *Client) RWMutex(name string) (*RWMutex, error) {
	n, err := baton.ValidateName(name)
	if err != nil {
		return nil, fmt.Errorf("sqllock: RWMutex: %w", err)
	}
	rw := &RWMutex{c: c, name: n}
	rw.read = recipe{name: n, what: "read lock", key: rwKey{rw, false}, kind: kindRead, waitKind: kindReadWait, grant: readGrant}
	rw.write = recipe{name: n, what: "write lock", key: rwKey{rw, true}, kind: kindWrite, waitKind: kindWriteWait,
		grant: func(others []recipeRow, ticket uint64) bool {
			return exclusiveGrant(others, ticket, kindWriteWait, kindReadWait)
		}}
	return rw, nil
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
	if l, err := baton.Reenter(ctx, rw.write.key); l != nil || err != nil {
		return l, err
	}
	return rw.c.acquireRecipe(ctx, &rw.read, wait)
}

func (rw *RWMutex) lock(ctx context.Context, wait bool) (*baton.Lease, error) {
	if _, ok := baton.Holding(ctx, rw.read.key); ok {
		return nil, fmt.Errorf("sqllock: write lock %q: %w", rw.name, baton.ErrUpgradeRefused)
	}
	return rw.c.acquireRecipe(ctx, &rw.write, wait)
}

// readGrant grants a reader while every other live row is a reader or a
// waiter that does not come before it: a waiting writer with an earlier
// ticket (any waiting writer, for a reader without a ticket yet) holds it
// back, and so does anything else — a writer, a live mutex row, a row of
// another recipe on the same name: an unknown row counts as exclusive
// rather than being overlooked.
func readGrant(others []recipeRow, ticket uint64) bool {
	for _, o := range others {
		switch o.kind {
		case kindRead, kindReadWait:
		case kindWriteWait:
			if ticket == 0 || o.token < ticket {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// exclusiveGrant grants an exclusive holder (a writer, a leader) when no
// other row holds and no waiter (a row of one of waitKinds) with an
// earlier ticket waits; a caller without a ticket yet (0) yields to every
// waiter.
func exclusiveGrant(others []recipeRow, ticket uint64, waitKinds ...string) bool {
	for _, o := range others {
		if !slices.Contains(waitKinds, o.kind) || ticket == 0 || o.token < ticket {
			return false
		}
	}
	return true
}
