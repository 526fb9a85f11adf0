package sqllock

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/baton-go/baton/engine"
	"github.com/baton-go/baton/engine/leasekit"
	"github.com/baton-go/baton/engine/leasekit/keeper"
	"github.com/baton-go/baton/engine/queuekit"
	"github.com/baton-go/baton/fence"
)

// The multi-row recipes (RWMutex, Semaphore, Election) keep every row of
// one name in the locks table at slots from 1 up: one row per holder
// (kind "read", "write", "permit", "leader") and one per waiter (kind
// "rwait", "wwait", "swait", "cwait": its intent). Slot -1 is the name's
// guard row; slot 0 is the Mutex's row, which the recipes never write and
// count as a foreign holder when it is live; slots from intentSlotBase up
// are Mutex waiters' intent rows ("mwait"), which the recipes never read.
//
// An attempt is one short transaction: lock the guard row (a locking
// upsert, so the first attempts on a new name serialise too), read the
// name's rows with their liveness judged by the database clock, decide in
// Go, then write one row: the grant, or the waiter's intent. A grant takes
// its token from the sequence or counter while the guard is held, after
// every earlier grant of the name committed, so tokens of a name strictly
// increase across grants of every kind. Rows whose lease expired are
// reaped (owner cleared) by the next attempt, so a dead holder neither
// blocks nor stays listed.
//
// A waiter's intent row is refreshed (its expiry pushed a TTL ahead) by
// each of its retries, which are at most TTL/4 apart, so it lasts as long
// as the waiter does and expires by itself if the waiter dies. Its token
// column holds a ticket taken from the same sequence when the intent was
// first written: waiters that compete for the same thing are served in
// ticket order. A granted waiter turns its intent row into the grant (same
// slot, same owner); a waiter that gives up releases it, owner-checked,
// through the keeper, like any lease. Intent rows make waiters visible
// (Inspect, baton inspect) and let a waiting writer hold readers back.

// Row kinds: the mutex's, and the multi-row recipes'.
const (
	kindMutex      = "mutex"
	kindRead       = "read"
	kindWrite      = "write"
	kindPermit     = "permit"
	kindLeader     = "leader"
	kindReadWait   = "rwait"
	kindWriteWait  = "wwait"
	kindPermitWait = "swait"
	kindCandidate  = "cwait"
	kindMutexWait  = "mwait"
)

// recipeRow is one row of a name as an attempt reads it.
type recipeRow struct {
	slot  int64
	kind  string
	owner string
	token uint64
	data  string
	live  bool // owned and unexpired on the database clock
}

// recipe describes one multi-row recipe to attemptRecipe.
type recipe struct {
	name     string
	kind     string // kind of a granted row
	waitKind string // kind of a waiter's intent row
	data     string // stored with both
	// grant decides from the live rows of other owners, and the caller's
	// ticket (0 while it has no intent row), whether to grant now.
	grant func(others []recipeRow, ticket uint64) bool
	// seen, if set, sees the live rows of other owners after every
	// attempt that read them, granted or not (the semaphore checks their
	// N: the client whose larger N grants it must be told too).
	seen func(others []recipeRow)
}

// recipeFor describes the rows of the acquire req.
func recipeFor(req *leasekit.Request) recipe {
	r := recipe{name: req.Name}
	switch req.Kind {
	case leasekit.KindRead:
		r.kind, r.waitKind, r.grant = kindRead, kindReadWait, readGrant
	case leasekit.KindWrite:
		r.kind, r.waitKind = kindWrite, kindWriteWait
		r.grant = func(others []recipeRow, ticket uint64) bool {
			return exclusiveGrant(others, ticket, kindWriteWait, kindReadWait)
		}
	case leasekit.KindPermit:
		r.kind, r.waitKind, r.data = kindPermit, kindPermitWait, string(queuekit.PermitsData(req.N))
		r.grant = func(others []recipeRow, ticket uint64) bool { return permitGrant(others, ticket, req.N) }
		r.seen = func(others []recipeRow) { req.Seen(permitsOf(req.Name, others), true) }
	case leasekit.KindLeader:
		r.kind, r.waitKind, r.data = kindLeader, kindCandidate, req.ID
		r.grant = func(others []recipeRow, ticket uint64) bool { return exclusiveGrant(others, ticket, kindCandidate) }
	}
	return r
}

// intent is a waiter's own row across attempts.
type intent struct {
	slot   int64 // -1: none
	ticket uint64
}

// attemptResult is what one attempt did.
type attemptResult struct {
	granted bool
	token   uint64
	slot    int64 // the slot the attempt wrote or was writing; -1: none
	others  []recipeRow
}

// recipeAttempts are the attempts of one multi-row acquire: each is one
// transaction (attemptRecipe). While refused, a waiter keeps an intent
// row, under one owner until an attempt fails: then what the attempt may
// have written and the intent row are released (owner-checked, in the
// background) and the waiter goes on under a new owner.
type recipeAttempts struct {
	c     *Client
	req   *leasekit.Request
	r     recipe
	owner string
	mine  intent
}

func (c *Client) recipeAttempts(req *leasekit.Request) *recipeAttempts {
	return &recipeAttempts{c: c, req: req, r: recipeFor(req), owner: engine.NewOwnerID(), mine: intent{slot: -1}}
}

func (a *recipeAttempts) Watch(int) (<-chan struct{}, func()) { return a.c.hub().watch(a.req.Name) }

func (a *recipeAttempts) Try(ctx context.Context, _ int) (leasekit.Result, error) {
	sent := time.Now()
	res, err := a.c.st.attemptRecipe(ctx, &a.r, a.owner, &a.mine, a.req.Wait)
	out := leasekit.Result{Sent: sent, Ref: keeper.Ref{Key: a.req.Name, Owner: a.owner, Aux: res.slot}}
	switch {
	case errors.Is(err, errGuardBusy):
		// Refused, the intent row kept: another attempt holds the guard,
		// and what it does (a grant, or a refusal) changes nothing here.
		return out, nil
	case err != nil:
		if a.c.contended(err) {
			out.Reached = time.Now() // busy until now: reached, not unreachable
		}
		return out, err
	case res.granted:
		out.Granted, out.Token = true, res.token
	}
	if a.r.seen != nil {
		a.r.seen(res.others)
	}
	return out, nil
}

// Forget releases what the failed attempt may have written and the
// intent row, and makes the next attempt under a new owner.
func (a *recipeAttempts) Forget(res leasekit.Result) {
	a.drop(res.Ref.Aux.(int64))
	a.owner = engine.NewOwnerID()
}

func (a *recipeAttempts) End(_ context.Context, granted bool) {
	if !granted {
		a.drop()
	}
}

// drop releases (owner-checked, in the background) the intent row and the
// slots given.
func (a *recipeAttempts) drop(slots ...int64) {
	for _, s := range append(slots, a.mine.slot) {
		if s >= 0 {
			a.c.k.Abandon(keeper.Ref{Key: a.req.Name, Owner: a.owner, Aux: s})
		}
	}
	a.mine = intent{slot: -1}
}

// attemptRecipe makes one attempt of r for owner in one transaction (see
// the comment at the top of this file). mine is the caller's intent row,
// updated from what the attempt found and wrote. With wait false a refused
// attempt writes no intent row. On an error, res.slot is the slot the
// attempt may have written.
func (s *store) attemptRecipe(ctx context.Context, r *recipe, owner string, mine *intent, wait bool) (res attemptResult, err error) {
	res.slot = -1
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return res, err
	}
	defer tx.Rollback() //nolint:errcheck // after Commit it is a no-op; before it, the error is the one returned
	v, err := s.readGuarded(ctx, tx, r.name, owner)
	if err != nil {
		return res, err
	}
	mine.slot, mine.ticket = -1, 0
	if v.own != nil {
		mine.slot, mine.ticket = v.own.slot, v.own.token
	}
	granted := r.grant(v.others, mine.ticket)
	for _, row := range v.reap {
		if _, err := tx.ExecContext(ctx, s.q.reap(), r.name, row.slot, row.owner); err != nil {
			return res, err
		}
	}
	if !granted && !wait {
		res.others = v.others
		return res, commit(tx)
	}
	tok := mine.ticket
	if granted || mine.slot < 0 {
		if tok, err = s.nextToken(ctx, tx); err != nil {
			return res, err
		}
	}
	kind := r.waitKind
	if granted {
		kind = r.kind
	}
	res.slot = v.slotFor(mine) // from here on, an error may leave the row written
	if err := s.writeRow(ctx, tx, r, v.exists[res.slot], res.slot, kind, owner, tok); err != nil {
		return res, err
	}
	if err := commit(tx); err != nil {
		return res, err
	}
	res.others = v.others
	if granted {
		res.granted, res.token = true, tok
		mine.slot, mine.ticket = -1, 0 // the intent row is the grant now
	} else {
		mine.slot, mine.ticket = res.slot, tok
	}
	return res, nil
}

// view is a name's rows as one attempt sees them.
type view struct {
	others  []recipeRow // live rows of other owners
	reap    []recipeRow // expired rows at slots ≥ 1 still owned: to clear
	own     *recipeRow  // the caller's row, if any
	free    int64       // lowest slot ≥ 1 nobody owns; -1: none
	maxSlot int64
	exists  map[int64]bool
}

// slotFor is where the caller's row goes: its intent row's slot, else
// the lowest free slot, else a new one past the last.
func (v *view) slotFor(mine *intent) int64 {
	switch {
	case mine.slot >= 0:
		return mine.slot
	case v.free >= 0:
		return v.free
	}
	return v.maxSlot + 1
}

func ms(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }

// errGuardBusy is an attempt that found the name's guard row locked by
// other attempts for longer than its lock timeout (PostgreSQL): the
// server answered, nothing was written, and the attempt is refused.
//
// A release wakes every waiter of a multi-row recipe, and they queue on
// the guard. Under load that queue outlasted the attempt timeout (TTL/3):
// the client then cancelled the statement, which closes the connection,
// so the next attempt had to open one first; with a short TTL a waiter
// could go TTL − DriftMargin without an answered attempt and fail with
// baton.ErrSessionLost while the server answered everyone. The server's
// lock timeout ends the wait instead, on a connection that stays open.
var errGuardBusy = errors.New("sqllock: the name's guard row stayed locked by other attempts")

// guardBusy reports whether err is PostgreSQL's lock timeout (SQLSTATE
// 55P03, lock_not_available), as pgx and lib/pq word it.
func (c *Client) guardBusy(err error) bool {
	msg := err.Error()
	return c.q.d == fence.Postgres && (strings.Contains(msg, "55P03") || strings.Contains(msg, "due to lock timeout"))
}

// readGuarded locks name's guard row in tx (bounding, on PostgreSQL, how
// long a cut-off client can keep it locked) and reads the name's rows as
// owner sees them.
func (s *store) readGuarded(ctx context.Context, tx *sql.Tx, name, owner string) (*view, error) {
	args := []any{name}
	if s.q.d == fence.Postgres {
		// A client cut off between two statements of this transaction
		// would keep the guard row locked until the server noticed the
		// dead connection (TCP keepalive: hours), stalling the name: the
		// server ends such a session after the attempt's own bound. And
		// the wait for the guard ends at half of it (see errGuardBusy).
		idle := max(s.c.attemptTimeout(), 100*time.Millisecond)
		args = append(args, ms(idle), ms(idle/2))
	}
	if _, err := tx.ExecContext(ctx, s.q.guard(), args...); err != nil {
		if s.c.guardBusy(err) {
			return nil, errGuardBusy
		}
		return nil, err
	}
	all, err := s.readRecipeRows(ctx, tx, name)
	if err != nil {
		return nil, err
	}
	v := &view{free: -1, exists: make(map[int64]bool, len(all))}
	for i := range all {
		row := &all[i]
		v.exists[row.slot] = true
		v.maxSlot = max(v.maxSlot, row.slot)
		switch {
		case row.owner == owner:
			v.own = row
		case row.live:
			v.others = append(v.others, *row)
		case row.slot >= 1:
			if row.owner != "" {
				v.reap = append(v.reap, *row)
			}
			if v.free < 0 {
				v.free = row.slot
			}
		}
	}
	return v, nil
}

// writeRow writes the caller's row at slot in tx: an update of the row
// there (exists) or a new row.
func (s *store) writeRow(ctx context.Context, tx *sql.Tx, r *recipe, exists bool, slot int64, kind, owner string, tok uint64) error {
	ttl := s.c.o.TTL.Microseconds()
	var err error
	if exists {
		_, err = tx.ExecContext(ctx, s.q.putRow(), kind, owner, int64(tok), r.data, ttl, s.c.holder, r.name, slot)
	} else {
		_, err = tx.ExecContext(ctx, s.q.newRow(), r.name, slot, kind, owner, int64(tok), r.data, ttl, s.c.holder)
	}
	return err
}

func commit(tx *sql.Tx) error {
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// querier is a *sql.DB or a *sql.Tx.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// readRecipeRows reads the rows of name at slots ≥ 0, liveness judged by
// the database clock.
func (s *store) readRecipeRows(ctx context.Context, q querier, name string) ([]recipeRow, error) {
	rows, err := q.QueryContext(ctx, s.q.recipeRows(), name)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []recipeRow
	for rows.Next() {
		var (
			r         recipeRow
			tok, live int64
		)
		if err := rows.Scan(&r.slot, &r.kind, &r.owner, &tok, &r.data, &live); err != nil {
			return nil, err
		}
		r.token = uint64(tok)
		r.live = live != 0 && r.owner != ""
		out = append(out, r)
	}
	return out, rows.Err()
}

// mysqlBump advances MySQL's one-row token counter (MariaDB takes the
// sequence's NEXTVAL inside tx instead: it locks no row) for a transaction that
// holds the name's row (or guard) lock. It does so in a statement of its
// own on another pooled connection, committed at once, so the counter's
// row is locked only for that statement: bumped inside tx, it stayed
// locked until tx ended, and a client cut off mid-transaction (MySQL has no
// idle-in-transaction timeout) stalled every acquire of every name until
// the server noticed the dead connection. Tokens still increase per name:
// the bump runs while tx holds the name's lock, after the previous grant's
// bump committed. Only with an unlimited pool (database/sql's default):
// with a bounded one, attempts holding every connection in their
// transactions (queued on one name's lock) would wait for a connection
// none of them frees, so there the bump stays inside tx.
func (s *store) mysqlBump(ctx context.Context, tx *sql.Tx) (uint64, error) {
	var res sql.Result
	var err error
	if s.db.Stats().MaxOpenConnections != 0 {
		res, err = tx.ExecContext(ctx, s.q.hot.txBump)
	} else {
		res, err = s.db.ExecContext(ctx, s.q.hot.txBump)
	}
	if err != nil {
		if s.moveToSequence(ctx) {
			return s.nextToken(ctx, tx)
		}
		return 0, err
	}
	tok, err := res.LastInsertId()
	if err != nil {
		return 0, err
	}
	return uint64(tok), nil
}

// nextToken advances the token source by one inside tx.
func (s *store) nextToken(ctx context.Context, tx *sql.Tx) (uint64, error) {
	var tok int64
	switch s.q.d {
	case fence.Postgres:
		if err := tx.QueryRowContext(ctx, s.q.nextToken()).Scan(&tok); err != nil {
			return 0, err
		}
	case fence.MySQL:
		if !s.seq.Load() {
			return s.mysqlBump(ctx, tx)
		}
		if err := tx.QueryRowContext(ctx, s.q.hot.myNext).Scan(&tok); err != nil {
			return 0, err
		}
	default:
		if err := tx.QueryRowContext(ctx, s.q.hot.txBump).Scan(&tok); err != nil {
			return 0, err
		}
	}
	return uint64(tok), nil
}
