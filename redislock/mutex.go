package redislock

import (
	"github.com/baton-go/baton"
	"github.com/baton-go/baton/engine/leasekit"
)

// mutex is an exclusive lock: one string key "<prefix>:{<name>}:mutex"
// holding the grant's owner, token and holder record, with the lease time
// as its expiry (see acquireMutex).
// It implements baton.Locker, with the lock operations of package leasekit
// (Lock, TryLock, LockFor, TryLockFor; fixed lease times in whole
// milliseconds). Locking it again with a context derived from one of its
// own leases re-enters (see the baton package doc). A *baton.Mutex of a
// Redis client wraps one; baton.As reaches its own methods (Key, LockFor,
// TryLockFor).
type mutex struct {
	*leasekit.Mutex
	c *Client
}

var _ baton.Locker = (*mutex)(nil)

// mutex returns the exclusive lock called name. An invalid name fails with
// an error wrapping baton.ErrInvalidName.
func (c *Client) mutex(name string) (*mutex, error) {
	m, err := c.eng.Mutex(name)
	if err != nil {
		return nil, err
	}
	return &mutex{Mutex: m, c: c}, nil
}

// Key returns the Redis key of the lock (a string: "<owner> <token>
// <proc>").
// Reach it through baton.As:
//
//	k, ok := baton.As[interface{ Key() string }](m) // m a *baton.Mutex
func (m *mutex) Key() string { return m.c.keysOf(m.Name()).base + sfxMutex }
