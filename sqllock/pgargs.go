package sqllock

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
)

// pgText is a text argument of a PostgreSQL statement that costs no
// allocation to pass: a string in an interface is boxed (one allocation
// per argument per statement), a pointer is not, and pgx encodes a
// pgtype.TextValuer without boxing the string again (pgx's own
// dereferencing of a *string boxes it). Value serves database/sql's
// other PostgreSQL drivers (lib/pq), which convert through it.
type pgText struct{ s string }

// TextValue implements pgtype.TextValuer.
func (t *pgText) TextValue() (pgtype.Text, error) { return pgtype.Text{String: t.s, Valid: true}, nil }

// Value implements driver.Valuer.
func (t *pgText) Value() (driver.Value, error) { return t.s, nil }

// pgRow holds a mutex acquire's statement arguments in the acquire's own
// state (mutexAttempts), so that an uncontended lock+unlock boxes them
// once at most and builds no argument slice: on PostgreSQL that was six
// allocations of its 29 (the name and owner of each statement, and each
// statement's argument list), on MySQL four of its 28. MySQL and SQLite
// box the owner once per attempt (ownerArg) and take the name boxed once
// per lock object (store.Bind). The attempt's arguments serve attempts
// whose statement runs on the acquiring goroutine (settle's inPlace):
// the next attempt may overwrite them only once the statement is done.
// After a grant the row is the lease's keeper.Ref.Aux, and release holds
// that grant's release arguments; nothing writes to it any more.
type pgRow struct {
	name, owner pgText       // PostgreSQL's
	nameArg     any          // MySQL's and SQLite's: the name, boxed once per lock
	hasRow      *atomic.Bool // MySQL's: the lock object's (myBound)
	ownerArg    any          // MySQL's and SQLite's: the attempt's owner, boxed
	attempt     [7]any       // pgAcquire's parameters
	release     []any        // release(1)'s parameters, in relBuf; set at the grant
	relBuf      [4]any
}

// newRow is the arguments' holder of an attempt on name, whose boxed
// form bound is (store.Bind; nil: boxed here).
func newRow(name string, bound any) *pgRow {
	r := &pgRow{}
	r.init(name, bound)
	return r
}

// init sets the name arguments of r (see newRow).
func (r *pgRow) init(name string, bound any) {
	r.name.s, r.nameArg = name, bound
	if b, ok := bound.(*myBound); ok {
		r.nameArg, r.hasRow = b.name, &b.hasRow
	}
	if r.nameArg == nil {
		r.nameArg = name
	}
}

// takeOther is MySQL's or SQLite's mutex attempt (store.acquire) with
// the arguments in r, a's own or a fresh one as for PostgreSQL (see
// take).
func (r *pgRow) takeOther(ctx context.Context, c *Client, owner string, ttl time.Duration) attempt {
	r.ownerArg = owner
	var out attempt
	out.tok, out.ok, out.err = c.st.acquire(ctx, r.nameArg, r.ownerArg, ttl, r.hasRow)
	if out.ok {
		r.relBuf = [4]any{r.nameArg, int64(0), r.ownerArg}
		r.release = r.relBuf[:3]
	}
	return out
}

// take is a PostgreSQL mutex attempt, one pgAcquire statement with the
// arguments in r: a's own pgRow when the statement runs on the acquiring
// goroutine, a fresh one when settle runs it on its own (the next
// attempt must not overwrite what a statement still running reads).
func (r *pgRow) take(ctx context.Context, c *Client, owner string, ttl time.Duration) attempt {
	r.owner.s = owner
	r.attempt = [7]any{&r.name, int64(0), argMutex, &r.owner, c.micros(ttl), c.holder, c.othersWait(r.name.s)}
	tok, err := c.pgToken(ctx, c.q.hot.pgAcquire, r.attempt[:]...)
	out := pgOutcome(tok, err)
	clear(r.attempt[:]) // nothing to keep alive
	if out.ok {
		r.relBuf = [4]any{&r.name, int64(0), &r.owner, c.q.locksArg}
		r.release = r.relBuf[:]
	}
	return out
}

// pgOutcome is an attempt's outcome from pgToken's answer: a token of 0
// or no row is a refusal (0: the held row was marked waiting).
func pgOutcome(tok int64, err error) attempt {
	switch {
	case errors.Is(err, sql.ErrNoRows), err == nil && tok == 0:
		return attempt{}
	case err != nil:
		return attempt{err: err}
	}
	return attempt{tok: uint64(tok), ok: true}
}
