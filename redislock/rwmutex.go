package redislock

import (
	"github.com/baton-go/baton"
	"github.com/baton-go/baton/engine/leasekit"
)

// rwMutex is a read/write lock, with the operations of leasekit.RWMutex.
// The writer is a hash key like a mutex's; readers are members
// "<owner>:<token>" of a sorted set scored by their expiry on the server's
// clock (milliseconds), so a dead reader's hold expires by itself while
// the others are renewed. Writers are not starved: a waiting writer
// records its intent in a second sorted set, and no new reader is granted
// while a writer waits ahead of it; readers and writers are granted in the
// order they queued (see the scripts: a reader never overtakes a queued
// writer, a writer never overtakes a queued reader).
//
// A context derived from a read lease of the same lock is refused the
// write side (baton.ErrUpgradeRefused): two readers upgrading would
// deadlock. A writer asking for the read side re-enters its write lease.
type rwMutex struct{ *leasekit.RWMutex }

var _ baton.Locker = (*rwMutex)(nil)

// rwMutex returns the read/write lock called name.
func (c *Client) rwMutex(name string) (*rwMutex, error) {
	rw, err := c.eng.RWMutex(name)
	if err != nil {
		return nil, err
	}
	return &rwMutex{rw}, nil
}
