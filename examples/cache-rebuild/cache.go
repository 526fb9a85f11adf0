package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/baton-go/baton"
)

// cache is the shared cache of the price list (a cache server in
// production; shared memory here): one value and whether it is fresh.
type cache struct {
	mu      sync.Mutex
	version int
	fresh   bool
}

func (c *cache) get() (version int, fresh bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.version, c.fresh
}

func (c *cache) set(version int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.version, c.fresh = version, true
}

// expire is the cache entry's TTL running out: the value stays, stale.
func (c *cache) expire() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.fresh = false
}

// origin is the expensive query behind the cache. Every rebuild costs
// rebuildTime of database time; twenty at once is the stampede the lock
// is there to prevent.
type origin struct {
	rebuilds atomic.Int32
}

const rebuildTime = 300 * time.Millisecond

func (o *origin) build(ctx context.Context) (int, error) {
	n := o.rebuilds.Add(1)
	select {
	case <-time.After(rebuildTime):
		return int(n) + 1, nil // version 1 was there before the story
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// served is how one read was answered.
type served int

func (s served) String() string {
	return [...]string{"fresh", "rebuilt", "stale behind the rebuild", "stale (lock unreachable)", "rebuilt anyway"}[s]
}

const (
	fresh    served = iota // the cache was fresh
	rebuilt                // this reader rebuilt it
	stale                  // someone else is rebuilding: the stale value
	degraded               // the lock backend failed: the stale value, no rebuild
	stampede               // the lock backend failed and the naive reader rebuilt anyway
)

// rebuildLease bounds how long a rebuilder holds the lock, renewed or
// not: a rebuilder that dies frees it by itself.
const rebuildLease = 2 * time.Second

// fixedLocker is the SQL mutex's TryLockFor: one attempt at a lease of a
// fixed time, never renewed. It is sqllock's own, reached through
// baton.As on the *baton.Mutex.
type fixedLocker interface {
	TryLockFor(ctx context.Context, leaseTime time.Duration) (*baton.Lease, error)
}

// read is one request for the price list. The lock is an efficiency
// lock: it only saves rebuilds, so it needs no fence (a second rebuild
// would write the same data), and when it cannot be had for certain —
// the backend is unreachable — the reader serves the stale value rather
// than rebuild: a lock failure is not permission to stampede. naive
// turns that last rule off, for the negative control.
func read(ctx context.Context, c *cache, o *origin, m fixedLocker, naive bool) (how served, lockErr, err error) {
	if _, ok := c.get(); ok {
		return fresh, nil, nil
	}
	l, lockErr := m.TryLockFor(ctx, rebuildLease)
	switch {
	case errors.Is(lockErr, baton.ErrNotAcquired):
		return stale, nil, nil
	case lockErr != nil && !naive:
		return degraded, lockErr, nil
	case lockErr != nil:
		_, err := rebuild(ctx, c, o)
		return stampede, lockErr, err
	}
	defer l.Release(context.WithoutCancel(ctx))
	if _, ok := c.get(); ok {
		return fresh, nil, nil // rebuilt by the holder before us
	}
	_, err = rebuild(ctx, c, o)
	return rebuilt, nil, err
}

func rebuild(ctx context.Context, c *cache, o *origin) (int, error) {
	v, err := o.build(ctx)
	if err != nil {
		return 0, fmt.Errorf("rebuild: %w", err)
	}
	c.set(v)
	return v, nil
}
