package sqllock

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/fence"
	"github.com/baton-go/baton/keeper"
)

// Mutex is an exclusive lock on one row (slot 0 of its name). It
// implements baton.Locker. Locking it again with a context derived from
// one of its own leases re-enters (see the baton package doc).
type Mutex struct {
	c    *Client
	name string
}

var _ baton.Locker = (*Mutex)(nil)

// Mutex returns the exclusive lock called name. An invalid name fails with
// an error wrapping baton.ErrInvalidName.
func (c *Client) Mutex(name string) (*Mutex, error) {
	n, err := baton.ValidateName(name)
	if err != nil {
		return nil, fmt.Errorf("sqllock: Mutex: %w", err)
	}
	return &Mutex{c: c, name: n}, nil
}

// Name returns the normalised lock name.
func (m *Mutex) Name() string { return m.name }

// Lock blocks until the lock is granted or ctx ends.
func (m *Mutex) Lock(ctx context.Context) (*baton.Lease, error) {
	return m.c.acquire(ctx, m, m.name, 0, "mutex", true, 0)
}

// TryLock makes one attempt; baton.ErrNotAcquired when another owner holds
// the lock.
func (m *Mutex) TryLock(ctx context.Context) (*baton.Lease, error) {
	return m.c.acquire(ctx, m, m.name, 0, "mutex", false, 0)
}

// LockFor is Lock with a fixed lease time: the row is never renewed and
// expires leaseTime after the grant on the database clock; the lease is
// Lost shortly before that (Redisson's lock(leaseTime)). Use it when the
// work has a known bound and must not hold the lock longer whatever
// happens to this process.
func (m *Mutex) LockFor(ctx context.Context, leaseTime time.Duration) (*baton.Lease, error) {
	if err := checkLeaseTime(leaseTime); err != nil {
		return nil, err
	}
	return m.c.acquire(ctx, m, m.name, 0, "mutex", true, leaseTime)
}

// TryLockFor is TryLock with a fixed lease time (see LockFor).
func (m *Mutex) TryLockFor(ctx context.Context, leaseTime time.Duration) (*baton.Lease, error) {
	if err := checkLeaseTime(leaseTime); err != nil {
		return nil, err
	}
	return m.c.acquire(ctx, m, m.name, 0, "mutex", false, leaseTime)
}

func checkLeaseTime(d time.Duration) error {
	if d < 300*time.Millisecond {
		return fmt.Errorf("%w: sqllock: lease time %v, want ≥ 300ms", baton.ErrInvalidOption, d)
	}
	return nil
}

// acquire is the loop every lock of the engine shares: attempt, and while
// the row is held (wait) sleep until a wake-up or the next backoff step.
// fixed > 0 is a fixed lease time (never renewed).
func (c *Client) acquire(ctx context.Context, key any, name string, slot int64, kind string, wait bool, fixed time.Duration) (*baton.Lease, error) {
	if l, err := baton.Reenter(ctx, key); l != nil || err != nil {
		return l, err
	}
	errf := func(format string, args ...any) error {
		return fmt.Errorf("sqllock: %s %q: "+format, append([]any{kind, name}, args...)...)
	}
	if err := c.checkOpen(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, errf("%w", err)
	}
	if err := c.ensureSchema(ctx); err != nil {
		if ctx.Err() != nil {
			return nil, errf("%w: %w", ctx.Err(), err)
		}
		return nil, errf("%w: %w", baton.ErrUnavailable, err)
	}
	ttl := c.o.TTL
	if fixed > 0 {
		ttl = fixed
	}
	// A waiter that has not reached the database for this long would have
	// lost a lease it held: its wait is over (ErrSessionLost).
	sessionBound := c.o.TTL - c.k.DriftMargin()
	lastOK := time.Now()
	for attempt := 0; ; attempt++ {
		woke, unwatch := c.hub().watch(name)
		owner := baton.NewOwnerID()
		ref := keeper.Ref{Key: name, Owner: owner, Aux: slot}
		sent := time.Now()
		actx, cancel := context.WithTimeout(ctx, c.o.TTL/3)
		stop := context.AfterFunc(c.ctx, cancel) // Close interrupts the attempt
		tok, ok, err := c.st.acquire(actx, name, slot, kind, owner, ttl)
		stop()
		cancel()
		if err == nil && ok {
			unwatch()
			lease, herr := c.k.Hold(ctx, baton.Grant{
				Name:   name,
				Engine: c.engine,
				Token:  tok + c.o.TokenFloor,
				Owner:  owner,
				Key:    key,
			}, ref, sent, fixed)
			if herr == nil {
				return lease, nil
			}
			if cerr := c.checkOpen(); cerr != nil {
				return nil, cerr
			}
			err = herr // the grant came too late to be trusted; Hold freed it
		}
		if err != nil {
			// The outcome is unknown: free whatever the attempt may have
			// taken, in the background, owner-checked.
			c.k.Abandon(ref)
			if ctx.Err() == nil && c.contended(err) {
				// The database answered "busy", it is not unreachable.
				lastOK = sent
			}
			switch {
			case ctx.Err() != nil:
				unwatch()
				return nil, errf("%w (last attempt: %v)", ctx.Err(), err)
			case c.checkOpen() != nil:
				unwatch()
				return nil, c.checkOpen()
			case time.Since(lastOK) >= sessionBound:
				unwatch()
				return nil, errf("%w: %w: no successful attempt for %v: %v", baton.ErrSessionLost, baton.ErrUnavailable, time.Since(lastOK).Round(time.Millisecond), err)
			case !wait:
				unwatch()
				return nil, errf("%w: %v", baton.ErrUnavailable, err)
			}
		} else {
			lastOK = sent
			if !wait {
				unwatch()
				return nil, errf("%w", baton.ErrNotAcquired)
			}
		}
		t := time.NewTimer(c.o.Backoff.Delay(attempt))
		select {
		case <-ctx.Done():
			t.Stop()
			unwatch()
			return nil, errf("%w", ctx.Err())
		case <-c.closing:
			t.Stop()
			unwatch()
			return nil, c.checkOpen()
		case <-woke:
			attempt = -1 // a release: start the backoff over
		case <-t.C:
		}
		t.Stop()
		unwatch()
	}
}

// contended reports whether an attempt's error means the database is busy
// rather than unreachable. Only SQLite can say so: it is embedded, so it
// cannot be partitioned away, and an attempt that timed out or got
// SQLITE_BUSY was waiting for the file's write lock behind other writers.
func (c *Client) contended(err error) bool {
	if c.q.d != fence.SQLite {
		return false
	}
	msg := err.Error()
	return errors.Is(err, context.DeadlineExceeded) || strings.Contains(msg, "SQLITE_BUSY") || strings.Contains(msg, "database is locked")
}
