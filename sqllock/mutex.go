package sqllock

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
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
	reached := false // some attempt got the database's answer
	// A waiter keeps an intent row (kind "mwait", see waitIntent), written
	// and refreshed after refused attempts, so that waiters are visible
	// (Entries, baton inspect). It never decides a grant: the mutex's row
	// is slot 0 alone. A granted waiter deletes it before returning; any
	// other end of the wait deletes it in the background, owner-checked.
	// Not on SQLite: every write there waits for the one file lock, and
	// with fifty waiters the intent writes tripled the time a contended
	// lock took to serve them all (the holders' renewals and releases
	// queue behind them).
	wi := &waitIntent{c: c, name: name, owner: baton.NewOwnerID(), slot: -1, off: c.q.d == fence.SQLite, since: time.Now()}
	defer wi.drop()
	for attempt := 0; ; attempt++ {
		woke, unwatch := c.hub().watch(name)
		owner := baton.NewOwnerID()
		ref := keeper.Ref{Key: name, Owner: owner, Aux: slot}
		sent := time.Now()
		actx, cancel := context.WithTimeout(ctx, c.attemptTimeout())
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
				wi.remove(ctx)
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
				lastOK = time.Now() // busy until now: reached, not unreachable
			}
			if ferr := c.failedAttempt(ctx, err, reached, lastOK, sessionBound, wait, errf); ferr != nil {
				unwatch()
				return nil, ferr
			}
		} else {
			lastOK, reached = sent, true
			if !wait {
				unwatch()
				return nil, errf("%w", baton.ErrNotAcquired)
			}
			wi.refresh(ctx)
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

// failedAttempt decides, after an acquire attempt failed with err, whether
// the acquire gives up, and with which error; nil means wait and retry.
// Every acquire loop of the engine (mutex, recipes) shares it.
func (c *Client) failedAttempt(ctx context.Context, err error, reached bool, lastOK time.Time, sessionBound time.Duration, wait bool, errf func(string, ...any) error) error {
	switch {
	case ctx.Err() != nil && !reached:
		return errf("%w: %w: the database was never reached (last attempt: %v)", ctx.Err(), baton.ErrUnavailable, err)
	case ctx.Err() != nil:
		return errf("%w (last attempt: %v)", ctx.Err(), err)
	case c.checkOpen() != nil:
		return c.checkOpen()
	case time.Since(lastOK) >= sessionBound:
		return errf("%w: %w: no successful attempt for %v: %v", baton.ErrSessionLost, baton.ErrUnavailable, time.Since(lastOK).Round(time.Millisecond), err)
	case !wait:
		return errf("%w: %v", baton.ErrUnavailable, err)
	}
	return nil
}

// contended reports whether an attempt's error means the database is busy
// rather than unreachable. SQLite can say so: it is embedded, so it cannot
// be partitioned away, and an attempt that timed out or got SQLITE_BUSY
// was waiting for the file's write lock behind other writers. On MySQL a
// deadlock victim was answered, so the server was reached.
func (c *Client) contended(err error) bool {
	msg := err.Error()
	if c.q.d == fence.MySQL {
		// InnoDB picked this transaction as a deadlock victim (two first
		// attempts on a new name's guard row) and rolled it back.
		return strings.Contains(msg, "Error 1213") || strings.Contains(msg, "Deadlock found")
	}
	if c.q.d != fence.SQLite {
		return false
	}
	return errors.Is(err, context.DeadlineExceeded) || strings.Contains(msg, "SQLITE_BUSY") || strings.Contains(msg, "database is locked")
}

// waitIntent is a mutex waiter's intent row. It lives at a random slot
// of the intent range (≥ intentSlotBase), written by one upsert without
// the guard row: waiters of a mutex are not ordered, so nothing needs
// serialising, and fifty waiters must not queue on one guard row just to
// be seen. A release deletes it (see store.Release), so the range leaves
// no tombstones behind.
type waitIntent struct {
	c       *Client
	name    string
	owner   string
	slot    int64     // -1 while no row may exist
	written time.Time // last write of the row
	since   time.Time // the acquire began
	off     bool      // no intent rows (SQLite)
}

// intentDelay is how long a mutex waiter waits before it writes its
// intent row: TTL/4, at most a second. Most waits of a busy lock are
// shorter, and a row that exists for a few milliseconds shows nobody
// anything while it costs two writes.
func (w *waitIntent) intentDelay() time.Duration { return min(w.c.o.TTL/4, time.Second) }

// refresh writes the intent row once the wait has lasted intentDelay, or
// refreshes it when a quarter of its TTL has passed since the last write: a released mutex wakes every
// waiter of the process, and an extra write per waiter per wake-up would
// double the load of a contended lock. It is only a display: an error
// drops the row (under a new owner and slot next time) and is otherwise
// ignored; the acquire loop reports the database's real trouble.
func (w *waitIntent) refresh(ctx context.Context) {
	switch {
	case w.off, w.slot < 0 && time.Since(w.since) < w.intentDelay(),
		w.slot >= 0 && time.Since(w.written) < w.c.o.TTL/4:
		return
	}
	if w.slot < 0 {
		w.slot = intentSlotBase + rand.Int64N(intentSlotBase)
	}
	w.written = time.Now()
	actx, cancel := context.WithTimeout(ctx, w.c.o.TTL/3)
	stop := context.AfterFunc(w.c.ctx, cancel)
	_, err := w.c.db.ExecContext(actx, w.c.q.intentUpsert(), w.name, w.slot, kindMutexWait, w.owner, w.c.o.TTL.Microseconds())
	stop()
	cancel()
	if err != nil {
		w.drop()
		w.owner = baton.NewOwnerID()
	}
}

// remove deletes the intent row of a granted waiter on the waiter's own
// goroutine (one round trip, bounded), so that a contended grant does not
// make the client's pool open a second connection for a background
// delete; on failure the delete goes to the background.
func (w *waitIntent) remove(ctx context.Context) {
	if w.slot < 0 {
		return
	}
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.c.o.TTL/4)
	defer cancel()
	ref := []keeper.Ref{{Key: w.name, Owner: w.owner, Aux: w.slot}}
	if err := w.c.st.Release(dctx, ref); err == nil {
		w.slot = -1
	}
}

// drop deletes the intent row, if any, in the background (owner-checked).
func (w *waitIntent) drop() {
	if w.slot >= 0 {
		w.c.k.Abandon(keeper.Ref{Key: w.name, Owner: w.owner, Aux: w.slot})
	}
	w.slot = -1
}
