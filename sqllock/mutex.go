package sqllock

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/engine"
	"github.com/baton-go/baton/engine/leasekit"
	"github.com/baton-go/baton/engine/leasekit/keeper"
	"github.com/baton-go/baton/fence"
)

// mutex is an exclusive lock on one row (slot 0 of its name), behind a
// *baton.Mutex. It implements baton.Locker, with the lock operations of
// package leasekit (Lock, TryLock, LockFor, TryLockFor): LockFor and
// TryLockFor, a lease of a fixed time that is not renewed, are reached
// with baton.As[interface{ LockFor(context.Context, time.Duration)
// (*baton.Lease, error) }] on the *baton.Mutex. Locking it again with a
// context derived from one of its own leases re-enters (see the baton
// package doc).
type mutex struct{ *leasekit.Mutex }

var _ baton.Locker = (*mutex)(nil)

// mutex returns the exclusive lock called name. An invalid name fails with
// an error wrapping baton.ErrInvalidName.
func (c *Client) mutex(name string) (*mutex, error) {
	m, err := c.eng.Mutex(name)
	if err != nil {
		return nil, err
	}
	return &mutex{m}, nil
}

// mutexAttempts are one Mutex acquire's attempts: each upserts slot 0 of
// the name under a new owner, with a lease time of the TTL (or the fixed
// lease time) on the database clock.
//
// A waiter keeps an intent row (kind "mwait", see waitIntent), written
// and refreshed after refused attempts (on PostgreSQL by the attempts'
// own statements, see pgwait.go), so that waiters are visible (Inspect,
// baton inspect). It never decides a grant: the mutex's row is slot 0
// alone. A granted waiter deletes it before returning; any other
// end of the wait deletes it in the background, owner-checked. Not on
// SQLite: every write there waits for the one file lock, and with fifty
// waiters the intent writes tripled the time a contended lock took to
// serve them all (the holders' renewals and releases queue behind them).
//
// The waiter's intent and its place in the hub live in the one
// allocation of the acquire's own state.
type mutexAttempts struct {
	c      *Client
	req    *leasekit.Request
	wi     waitIntent
	hw     mutexWaiter // this waiter in the process's hub, from the first Watch
	joined bool        // hw is in the hub
	pg     pgRow       // PostgreSQL's arguments (see pgargs.go)
}

func (c *Client) mutexAttempts(req *leasekit.Request) *mutexAttempts {
	a := &mutexAttempts{c: c, req: req}
	a.wi = waitIntent{c: c, name: req.Name, slot: -1, off: c.q.d == fence.SQLite, since: time.Now()}
	a.pg.init(req.Name, req.Bound)
	return a
}

// Watch joins the process's hub at the first attempt, and stays until
// End: a mutex waiter keeps its place among the name's waiters (the
// oldest is woken first, see wake.go).
func (a *mutexAttempts) Watch(int) (<-chan struct{}, func()) {
	if !a.joined {
		a.c.hub().join(&a.hw, a.req.Name)
		a.joined = true
	}
	return a.hw.arm(), noUnwatch
}

func noUnwatch() {}

func (a *mutexAttempts) Try(ctx context.Context, _ int) (leasekit.Result, error) {
	ttl := a.c.o.TTL
	if a.req.Fixed > 0 {
		ttl = a.req.Fixed
	}
	owner := engine.NewOwnerID()
	res := leasekit.Result{Sent: time.Now(), Ref: keeper.Ref{Key: a.req.Name, Owner: owner, Aux: int64(0)}}
	var (
		intent keeper.Ref // the intent row the statement may write or delete
		write  bool
	)
	pgWait := a.c.q.d == fence.Postgres && a.req.Wait && (a.wi.slot >= 0 || a.wi.due())
	if pgWait {
		write = a.wi.due()
		if a.wi.slot < 0 {
			a.wi.slot = a.wi.newSlot()
		}
		intent = keeper.Ref{Key: a.req.Name, Owner: a.wi.owner, Aux: a.wi.slot}
	}
	var (
		out  attempt
		done = true
		row  *pgRow // the PostgreSQL statement's arguments (see pgargs.go)
	)
	switch {
	case a.c.inPlace(ctx, a.req.Endless) && pgWait:
		out = a.wi.pgRun(ctx, owner, ttl, write, a.wi.slot, a.wi.owner)
	case a.c.inPlace(ctx, a.req.Endless) && a.c.q.d == fence.Postgres:
		// The uncontended path: no closure for settle to run elsewhere,
		// and no argument boxed.
		row = &a.pg
		out = row.take(ctx, a.c, owner, ttl)
	case a.c.inPlace(ctx, a.req.Endless):
		// The uncontended path: no closure for settle to run elsewhere.
		row = &a.pg
		out = row.takeOther(ctx, a.c, owner, ttl)
	case pgWait:
		out, done = a.c.settle(ctx, a.req.Endless, a.wi.pgAttempt(owner, ttl, write), a.late(res.Ref, intent))
	case a.c.q.d == fence.Postgres:
		r, c := newRow(a.req.Name, a.req.Bound), a.c // r, not row: a closure's captured variable that is set again lives on the heap
		out, done = c.settle(ctx, a.req.Endless, func(ctx context.Context) attempt {
			return r.take(ctx, c, owner, ttl)
		}, a.late(res.Ref, intent))
		row = r
	default:
		r, c := newRow(a.req.Name, a.req.Bound), a.c // r, not row: a closure's captured variable that is set again lives on the heap
		out, done = c.settle(ctx, a.req.Endless, func(ctx context.Context) attempt {
			return r.takeOther(ctx, c, owner, ttl)
		}, a.late(res.Ref, intent))
		row = r
	}
	switch {
	case !done:
		a.wi.slot = -1 // late drops it, after the statement
		return res, ctx.Err()
	case out.err != nil:
		if a.c.contended(out.err) {
			res.Reached = time.Now() // busy until now: reached, not unreachable
		}
		if errors.As(out.err, new(tookNothing)) {
			res.Ref = keeper.Ref{} // nothing for Forget to free
		}
		return res, out.err
	case out.ok:
		if intent.Key != "" {
			a.wi.slot = -1 // deleted with the grant
		}
		res.Granted, res.Token = true, out.tok
		if row != nil && row.release != nil {
			res.Ref.Aux = row // the release's arguments (see pgRow)
		}
	case a.req.Wait:
		if write {
			a.wi.written = time.Now()
		}
		if a.c.q.d != fence.Postgres {
			a.wi.refresh(ctx)
		}
		res.Poll = a.c.pollFloor(a.c.hub().mutexWaiters(a.req.Name))
	}
	return res, nil
}

// late frees what an attempt that Try gave up on did, once its statement
// is done (see settle.go): its grant, or whatever it may have left after
// an error, and the intent row it may have written (owner-checked).
func (a *mutexAttempts) late(ref, intent keeper.Ref) func(attempt) {
	c := a.c
	return func(out attempt) {
		if out.ok || out.err != nil {
			c.k.Abandon(ref)
		}
		if intent.Key != "" {
			c.k.Abandon(intent)
		}
	}
}

// Forget abandons what a failed attempt may have taken: nothing, when its
// error says so (tookNothing).
func (a *mutexAttempts) Forget(res leasekit.Result) {
	if res.Ref.Key != "" {
		a.c.k.Abandon(res.Ref)
	}
}

func (a *mutexAttempts) End(ctx context.Context, granted bool) {
	if a.joined {
		a.hw.leave(granted)
	}
	if granted {
		a.wi.remove(ctx)
	} else {
		a.wi.drop()
	}
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
	owner   string    // the row's owner, made with its first slot (newSlot)
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
// refreshes it when it is due (see due): an extra write per attempt would
// double the load of a contended lock.
// It is only a display: an error drops the row (under a new owner and
// slot next time) and is otherwise ignored; the acquire loop reports the
// database's real trouble.
func (w *waitIntent) refresh(ctx context.Context) {
	if !w.due() {
		return
	}
	if w.slot < 0 {
		w.slot = w.newSlot()
	}
	w.written = time.Now()
	actx, cancel := context.WithTimeout(ctx, w.c.o.TTL/3)
	stop := context.AfterFunc(w.c.ctx, cancel)
	_, err := w.c.db.ExecContext(actx, w.c.q.intentUpsert(), w.name, w.slot, kindMutexWait, w.owner, w.c.o.TTL.Microseconds(), w.c.holder)
	stop()
	cancel()
	if err != nil {
		w.drop()
		w.owner = "" // a new one with the next slot
	}
}

// due reports whether the intent row is to be written (the wait has
// lasted intentDelay) or refreshed (3/8 of its TTL has passed since the
// last write). A waiter's attempts are at most TTL/2 apart (PollFloor), so
// a refresh lands by 7/8 of the TTL, before the row lapses. At TTL/4 a
// large waiter set, whose polls are TTL/4 to TTL/2 apart, refreshed at
// every poll: on MySQL that doubled what its waiters sent at rest.
func (w *waitIntent) due() bool {
	switch {
	case w.off, w.slot < 0 && time.Since(w.since) < w.intentDelay(),
		w.slot >= 0 && time.Since(w.written) < intentRefresh(w.c.o.TTL):
		return false
	}
	return true
}

// intentRefresh is the age at which an intent row is refreshed.
func intentRefresh(ttl time.Duration) time.Duration { return ttl * 3 / 8 }

// newSlot picks the intent row's slot, at random in the intent range,
// and makes the row's owner if it has none: most acquires never write
// the row, and need neither.
func (w *waitIntent) newSlot() int64 {
	if w.owner == "" {
		w.owner = engine.NewOwnerID()
	}
	return intentSlotBase + rand.Int64N(intentSlotBase)
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
