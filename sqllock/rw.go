package sqllock

import (
	"slices"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/engine/leasekit"
)

// rwMutex is a read/write lock on the rows of one name (see recipe.go for
// the layout), behind a *baton.RWMutex, with the operations of
// leasekit.RWMutex.
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
type rwMutex struct{ *leasekit.RWMutex }

var _ baton.Locker = (*rwMutex)(nil)

// rwMutex returns the read/write lock called name. An invalid name fails
// with an error wrapping baton.ErrInvalidName.
func (c *Client) rwMutex(name string) (*rwMutex, error) {
	rw, err := c.eng.RWMutex(name)
	if err != nil {
		return nil, err
	}
	return &rwMutex{rw}, nil
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
