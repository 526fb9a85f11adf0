package sqllock

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/engine/leasekit"
	"github.com/baton-go/baton/engine/leasekit/keeper"
	"github.com/baton-go/baton/fence"
)

// store is the keeper.Store of a Client: batched owner-checked renewals
// and releases on the locks table, plus the acquire the keeper does not
// need to know about.
type store struct {
	c     *Client
	db    *sql.DB
	q     *statements
	batch int

	// renewConn and releaseConn are connections of the pool kept warm for
	// the keeper's renewals and releases (see warm.go).
	renewConn, releaseConn warmConn

	// seq is set when MySQL-dialect tokens come from the sequence
	// (MariaDB; see sequence.go), at the first use.
	seq atomic.Bool

	// stmts are SQLite's prepared statements (see prepared), nil for
	// good once stmtsDone; stmtMu guards both.
	stmtMu    sync.Mutex
	stmts     map[string]*sql.Stmt
	stmtsDone bool

	// lite is SQLite's connection for mutex attempts and releases (see
	// liteConn).
	lite liteConn
}

// execQuerier is what a renewal runs on: the pool or the pinned connection.
type execQuerier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// unpin returns the warm connections to the pool and closes the prepared
// statements, for good (Close).
func (s *store) unpin() {
	s.stmtMu.Lock()
	s.stmtsDone = true
	for _, st := range s.stmts {
		_ = st.Close()
	}
	s.stmts = nil
	s.stmtMu.Unlock()
	s.lite.unpin()
	s.renewConn.unpin()
	s.releaseConn.unpin()
}

var _ keeper.Store = (*store)(nil)

// slotOf is the slot a keeper.Ref carries in Aux.
func slotOf(r keeper.Ref) int64 {
	if _, ok := r.Aux.(*pgRow); ok {
		return 0 // a mutex's grant
	}
	s, _ := r.Aux.(int64)
	return s
}

func (s *store) BatchSize() int { return s.batch }

// refArgs appends each ref's (name, slot, owner) to args.
func refArgs(args []any, refs []keeper.Ref) []any {
	for _, r := range refs {
		args = append(args, r.Key, slotOf(r), r.Owner)
	}
	return args
}

// release1Args are release(1)'s arguments for r (MySQL, SQLite): a mutex
// grant's own, boxed by its attempt (see pgRow).
func release1Args(r keeper.Ref) []any {
	if row, ok := r.Aux.(*pgRow); ok {
		return row.release
	}
	return []any{r.Key, slotOf(r), r.Owner}
}

// refArrays splits refs into the three arrays PostgreSQL unnests.
func refArrays(refs []keeper.Ref) (names []string, slots []int64, owners []string) {
	names, slots, owners = make([]string, len(refs)), make([]int64, len(refs)), make([]string, len(refs))
	for i, r := range refs {
		names[i], slots[i], owners[i] = r.Key, slotOf(r), r.Owner
	}
	return names, slots, owners
}

type rowID struct {
	name  string
	slot  int64
	owner string
}

// Renew runs on the connection kept warm for renewals when it is free (a
// late renewal may still hold it), else on the pool. The keeper then does
// not compete with acquires for connections, and its statement is already
// prepared: on a slow link a renewal that must open a connection (TCP,
// startup, prepare, execute) takes three or four flights, which at a
// latency of TTL/4 is more than the lease has left — a cancelled query of
// the caller's on the same pool (the driver closes that connection) was
// enough to lose every lease (drill row 8).
func (s *store) Renew(ctx context.Context, refs []keeper.Ref, ttl time.Duration) (renewed []bool, err error) {
	err = s.renewConn.run(ctx, s, func(s *store, ctx context.Context, db execQuerier, refs []keeper.Ref) error {
		renewed, err = s.renew(ctx, db, refs, ttl)
		return err
	}, refs)
	return renewed, err
}

func (s *store) renew(ctx context.Context, db execQuerier, refs []keeper.Ref, ttl time.Duration) ([]bool, error) {
	mark := rand.Int64()
	var rows *sql.Rows
	switch s.q.d {
	case fence.MySQL:
		res, err := db.ExecContext(ctx, s.q.renew(len(refs)), refArgs([]any{ttl.Microseconds(), mark}, refs)...)
		if err != nil {
			return nil, err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return nil, err
		}
		renewed := make([]bool, len(refs))
		if int(n) == len(refs) {
			for i := range renewed {
				renewed[i] = true
			}
			return renewed, nil
		}
		rows, err = db.QueryContext(ctx, s.q.renewedMarked(len(refs)), refArgs([]any{mark}, refs)...)
		if err != nil {
			return nil, err
		}
	case fence.Postgres:
		names, slots, owners := refArrays(refs)
		var err error
		rows, err = db.QueryContext(ctx, s.q.renew(len(refs)), ttl.Microseconds(), mark, names, slots, owners)
		if err != nil {
			return nil, err
		}
	default:
		var err error
		rows, err = db.QueryContext(ctx, s.q.renew(len(refs)), refArgs([]any{ttl.Microseconds(), mark}, refs)...)
		if err != nil {
			return nil, err
		}
	}
	defer rows.Close()
	got := make(map[rowID]bool, len(refs))
	for rows.Next() {
		var id rowID
		if err := rows.Scan(&id.name, &id.slot, &id.owner); err != nil {
			return nil, err
		}
		got[id] = true
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	renewed := make([]bool, len(refs))
	for i, r := range refs {
		renewed[i] = got[rowID{r.Key, slotOf(r), r.Owner}]
	}
	return renewed, nil
}

// Release runs on the connection kept warm for releases when it is free,
// else on the pool: an abandoned grant is freed with a prepared statement
// even when the pool's other connections were closed by cancelled queries,
// and never on the renewals' connection. The keeper's queued releases run
// beside its rounds; one that held the renewals' connection through a slow
// link sent the next renewal to the pool, where a fresh connection's
// handshake and prepares cost more flights than the lease had left.
func (s *store) Release(ctx context.Context, refs []keeper.Ref) error {
	return s.releaseConn.run(ctx, s, (*store).release, refs)
}

func (s *store) release(ctx context.Context, db execQuerier, refs []keeper.Ref) error {
	// Intent rows of mutex waiters are deleted: their random slots would
	// otherwise pile up as tombstones. Nobody waits for them to go.
	var intents []keeper.Ref
	if slices.ContainsFunc(refs, func(r keeper.Ref) bool { return slotOf(r) >= intentSlotBase }) {
		var rest []keeper.Ref // the keeper's slice is not ours to reorder
		for _, r := range refs {
			if slotOf(r) >= intentSlotBase {
				intents = append(intents, r)
			} else {
				rest = append(rest, r)
			}
		}
		refs = rest
	}
	if len(intents) > 0 {
		var err error
		if s.q.d == fence.Postgres {
			names, slots, owners := refArrays(intents)
			_, err = db.ExecContext(ctx, s.q.deleteRefs(len(intents)), names, slots, owners)
		} else {
			_, err = db.ExecContext(ctx, s.q.deleteRefs(len(intents)), refArgs(nil, intents)...)
		}
		if err != nil {
			return err
		}
	}
	if len(refs) == 0 {
		return nil
	}
	var err error
	switch {
	case s.q.d == fence.Postgres && len(refs) == 1:
		// A lease's own release: a single-row UPDATE by primary key; the
		// unnest join of pgRelease costs ~130 µs more per call (bench).
		if row, ok := refs[0].Aux.(*pgRow); ok {
			_, err = db.ExecContext(ctx, s.q.hot.release1, row.release[:]...) // nothing boxed
		} else {
			r := refs[0]
			_, err = db.ExecContext(ctx, s.q.hot.release1, r.Key, slotOf(r), r.Owner, s.q.locksArg)
		}
	case s.q.d == fence.Postgres:
		names, slots, owners := refArrays(refs)
		_, err = db.ExecContext(ctx, s.q.pgRelease(), names, slots, owners, s.q.locks)
	case s.q.d == fence.SQLite && len(refs) == 1 && s.lite.grab(ctx, s):
		_, err = s.lite.st.release.ExecContext(ctx, release1Args(refs[0])...)
		s.lite.mu.Unlock()
	case s.q.d == fence.SQLite && len(refs) == 1:
		var st *sql.Stmt
		if st, err = s.prepared(ctx, s.q.hot.release1); err == nil {
			_, err = st.ExecContext(ctx, release1Args(refs[0])...)
		}
	case len(refs) == 1:
		_, err = db.ExecContext(ctx, s.q.hot.release1, release1Args(refs[0])...)
	default:
		_, err = db.ExecContext(ctx, s.q.release(len(refs)), refArgs(nil, refs)...)
	}
	if err != nil {
		return err
	}
	for _, r := range refs {
		s.c.hub().released(r.Key)
	}
	return nil
}

// acquire makes one attempt at a mutex's row (slot 0) of name for owner,
// with a lease time of ttl on the database clock, on MySQL or SQLite
// (PostgreSQL's is pgRow.take). ok is false when the row is held by
// another owner. An error leaves the outcome unknown: the caller hands
// owner to keeper.Abandon. name and owner come boxed (see pgRow).
func (s *store) acquire(ctx context.Context, name, owner any, ttl time.Duration, hasRow *atomic.Bool) (token uint64, ok bool, err error) {
	if s.q.d == fence.MySQL {
		return s.myAcquire(ctx, name, owner, ttl, hasRow)
	}
	return s.liteAcquire(ctx, name, owner, ttl)
}

// Bind boxes a lock's name once per lock object (leasekit.Binder): a
// mutex attempt on MySQL or SQLite passes it as a statement argument, and
// so does its lease's release (see pgRow). On MySQL it comes with what
// the lock object's attempts learn about its row (myBound).
func (s *store) Bind(name string, _ leasekit.Kind) any {
	if s.q.d == fence.MySQL {
		return &myBound{name: name}
	}
	return name
}

// myBound is a MySQL lock object's name, boxed once, and whether its
// attempts have seen the name's row: an attempt on MariaDB then takes the
// row with one UPDATE, and a name's first acquire, or one whose row went
// missing, with the upsert (see myAcquire).
type myBound struct {
	name   any
	hasRow atomic.Bool
}

// liteAcquire is SQLite's attempt: one transaction of two prepared
// statements, the row taken with the counter's next value (or refused,
// and rolled back) and the counter advanced (see statements.liteTake),
// on the client's own connection when it is free (liteConn), else on the
// pool. Parsing was a quarter of an uncontended lock's CPU time when every
// statement was prepared afresh, and an upsert, a counter bump and a
// separate token write cost three statements where two do.
func (s *store) liteAcquire(ctx context.Context, name, owner any, ttl time.Duration) (token uint64, ok bool, err error) {
	if s.lite.grab(ctx, s) {
		defer s.lite.mu.Unlock()
		return s.lite.acquire(ctx, s, name, owner, ttl)
	}
	take, err := s.prepared(ctx, s.q.hot.liteTake)
	if err != nil {
		return 0, false, err
	}
	bump, err := s.prepared(ctx, s.q.hot.liteBump)
	if err != nil {
		return 0, false, err
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, false, tookNothing{err}
	}
	defer tx.Rollback() //nolint:errcheck // after Commit it is a no-op; before it, the error is the one returned
	var tok int64
	switch err := tx.StmtContext(ctx, take).QueryRowContext(ctx, name, int64(0), argMutex, owner, s.c.micros(ttl), s.c.holder).Scan(&tok); {
	case errors.Is(err, sql.ErrNoRows):
		return 0, false, nil // held by another owner
	case err != nil:
		return 0, false, err
	}
	if _, err := tx.StmtContext(ctx, bump).ExecContext(ctx); err != nil {
		return 0, false, err
	}
	if err := tx.Commit(); err != nil {
		return 0, false, fmt.Errorf("commit: %w", err)
	}
	return uint64(tok), true, nil
}

// prepared returns query prepared on the pool, preparing it at the first
// call (SQLite: its driver parses a statement at every call otherwise; the
// network drivers cache or interpolate theirs). The statements are closed
// with the client (unpin).
func (s *store) prepared(ctx context.Context, query string) (*sql.Stmt, error) {
	s.stmtMu.Lock()
	defer s.stmtMu.Unlock()
	if st := s.stmts[query]; st != nil {
		return st, nil
	}
	if s.stmtsDone {
		return nil, fmt.Errorf("sqllock: %w", baton.ErrClosed)
	}
	st, err := s.db.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	if s.stmts == nil {
		s.stmts = make(map[string]*sql.Stmt)
	}
	s.stmts[query] = st
	return st, nil
}

// myAcquire is MySQL's attempt. With the sequence (MariaDB) it is one
// autocommitted statement, the row taken with the sequence's next value
// if it is free and holds a smaller token: an UPDATE of the name's row
// once hasRow says the lock object has seen it (statements.myTakeRow),
// else the upsert (statements.myTake), so that a name's first acquire is
// one statement too. With the counter it is two,
// one flight each: the counter advanced, then the row taken with that
// token on the same condition (see statements.myTake). A transaction
// around an upsert, the counter and the token's write cost six flights
// with its BEGIN, COMMIT and the release, held the row's lock across three
// of them, and a client cut off inside it left the name locked until the
// server dropped the connection. A refused attempt still uses up a token:
// the counter grows with attempts, not only with grants. hasRow is the
// lock object's (myBound); nil, every attempt sends the upsert.
func (s *store) myAcquire(ctx context.Context, name, owner any, ttl time.Duration, hasRow *atomic.Bool) (token uint64, ok bool, err error) {
	if s.seq.Load() {
		if hasRow != nil && hasRow.Load() {
			tok, ok, found, err := s.myTakeRow(ctx, name, owner, ttl)
			if err != nil || found {
				return tok, ok, err
			}
			hasRow.Store(false) // gone: the upsert adds it back
		}
		// The upsert: the token is the sequence's next value, and the
		// result's LastInsertId is 0 when the row was not taken.
		res, err := s.db.ExecContext(ctx, s.q.hot.myTakeSeq, name, int64(0), argMutex, owner, s.c.micros(ttl), s.c.holder)
		if err != nil {
			return 0, false, err
		}
		got, err := res.LastInsertId()
		if err != nil {
			return 0, false, err
		}
		if hasRow != nil {
			hasRow.Store(true) // taken or held: the row is there
		}
		if got <= 0 {
			return 0, false, nil
		}
		return uint64(got), true, nil
	}
	res, err := s.db.ExecContext(ctx, s.q.hot.txBump)
	if err != nil {
		if s.moveToSequence(ctx) {
			return s.myAcquire(ctx, name, owner, ttl, hasRow)
		}
		return 0, false, err
	}
	tok, err := res.LastInsertId()
	if err != nil {
		return 0, false, err
	}
	res, err = s.db.ExecContext(ctx, s.q.hot.myTake, name, int64(0), argMutex, owner, tok, s.c.micros(ttl), s.c.holder)
	if err != nil {
		return 0, false, err
	}
	got, err := res.LastInsertId()
	if err != nil || got != tok || tok == 0 {
		return 0, false, err
	}
	return uint64(tok), true, nil
}

// myTakeRow is MariaDB's attempt on a name whose row the lock object has
// seen: one UPDATE (statements.myTakeRow). found is false, with nothing
// done, when the row is not there.
func (s *store) myTakeRow(ctx context.Context, name, owner any, ttl time.Duration) (token uint64, ok, found bool, err error) {
	res, err := s.db.ExecContext(ctx, s.q.hot.myTakeRow, argMutex, owner, s.c.holder, s.c.micros(ttl), name)
	if err != nil {
		return 0, false, true, err
	}
	switch got, err := res.LastInsertId(); {
	case err != nil:
		return 0, false, true, err
	case got == heldID:
		return 0, false, true, nil
	case got > 0:
		return uint64(got), true, true, nil
	}
	return 0, false, false, nil
}

// Begin starts one acquire for package leasekit: the Mutex's single row,
// or the rows of a multi-row recipe (see recipe.go).
func (s *store) Begin(req *leasekit.Request) leasekit.Attempts {
	if req.Kind == leasekit.KindMutex {
		return s.c.mutexAttempts(req)
	}
	return s.c.recipeAttempts(req)
}

// Prepare creates (or checks) the schema at the client's first use.
func (s *store) Prepare(ctx context.Context) error { return s.c.ensureSchema(ctx) }

// Watch wakes at the next release of name seen by this process.
func (s *store) Watch(name string) (<-chan struct{}, func()) { return s.c.hub().watch(name) }

var (
	_ leasekit.Store    = (*store)(nil)
	_ leasekit.Preparer = (*store)(nil)
	_ leasekit.Watcher  = (*store)(nil)
	_ leasekit.Leaders  = (*store)(nil)
)
