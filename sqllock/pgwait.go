package sqllock

import (
	"context"
	"database/sql"
	"errors"
	"time"
)

// A PostgreSQL mutex waiter's intent row rides on its attempts: once the
// wait has lasted intentDelay, each attempt is one statement that takes
// the lock, or else writes (or refreshes) the intent; and a grant deletes
// the intent in the same statement. Written by statements of their own,
// the intent cost two requests per waiter that waited long enough (the
// write and, at the grant, the delete): with one attempt per handoff (see
// wake.go) that was two requests of every handoff of a lock with hundreds
// of waiters, against none with five. The intent is not written at a
// waiter's first refusal even so: an uncontended acquire would then pay
// for the larger statement, and most waits of a busy lock are short.

// pgAcquireWait is pgAcquire with the waiter's intent row (slot $7 of
// name, owner $8): a refused attempt writes it when $10 is true (kind
// "mwait", lease $9 µs, the holder record $6), owner-checked as
// intentUpsert; a grant deletes it. Data-modifying WITH clauses run on one
// snapshot and see each other only through RETURNING, which is what w and
// d read of t (a token of 0: refused, the held row marked waiting).
// Parameters: name, slot, kind, owner, ttl µs, holder record, intent
// slot, intent owner, intent ttl µs, write the intent, other waiters
// wait in this process (see pgAcquire).
func (s *statements) pgAcquireWait() string {
	return `WITH t AS (` + s.pgAcquire(11) + `), w AS (
	INSERT INTO ` + s.locks + ` AS l (name, slot, kind, owner, token, expires_at, holder)
	SELECT $1, $7, '` + kindMutexWait + `', $8, 0, ` + s.later(9) + `, $6
	WHERE $10::boolean AND NOT EXISTS (SELECT 1 FROM t WHERE token > 0)
	ON CONFLICT (name, slot) DO UPDATE SET expires_at = excluded.expires_at WHERE l.owner = excluded.owner
), d AS (
	DELETE FROM ` + s.locks + `
	WHERE name = $1 AND slot = $7 AND owner = $8 AND EXISTS (SELECT 1 FROM t WHERE token > 0)
)
SELECT token FROM t`
}

// pgAttempt is a PostgreSQL mutex waiter's attempt statement once its
// intent row is due or written (see above), the intent at w.slot, written
// when write is set. After a grant the row is gone; after an error it may
// exist.
func (w *waitIntent) pgAttempt(owner string, ttl time.Duration, write bool) func(context.Context) attempt {
	slot, iowner := w.slot, w.owner
	return func(ctx context.Context) attempt { return w.pgRun(ctx, owner, ttl, write, slot, iowner) }
}

// pgRun runs pgAttempt's statement under ctx, the intent at slot under
// iowner.
func (w *waitIntent) pgRun(ctx context.Context, owner string, ttl time.Duration, write bool, slot int64, iowner string) attempt {
	c := w.c
	tok, err := c.pgToken(ctx, c.q.hot.pgAcquireWait, w.name, 0, kindArg(kindMutex), owner, c.micros(ttl), c.holder,
		slot, iowner, c.ttlMicros, write, c.othersWait(w.name))
	switch {
	case errors.Is(err, sql.ErrNoRows), err == nil && tok == 0: // refused
		return attempt{}
	case err != nil:
		return attempt{err: err}
	}
	return attempt{tok: uint64(tok), ok: true}
}
