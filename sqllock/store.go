package sqllock

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/baton-go/baton/fence"
	"github.com/baton-go/baton/keeper"
	"github.com/baton-go/baton/leasing"
)

// store is the keeper.Store of a Client: batched owner-checked renewals
// and releases on the locks table, plus the acquire the keeper does not
// need to know about.
type store struct {
	c     *Client
	db    *sql.DB
	q     *statements
	batch int

	// pinned is a connection of the pool kept for renewals (see Renew);
	// pinMu is held while it is in use or replaced.
	pinMu  sync.Mutex
	pinned *sql.Conn
	closed bool
}

// execQuerier is what a renewal runs on: the pool or the pinned connection.
type execQuerier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// pinnable reports whether renewals may keep a connection of their own:
// on a network database (SQLite is embedded), and never out of a pool of
// two or fewer, which it would starve.
func (s *store) pinnable() bool {
	n := s.db.Stats().MaxOpenConnections
	return s.q.d != fence.SQLite && (n == 0 || n > 2)
}

// pin opens the renewal connection and runs an empty renewal on it, so
// that the statement is prepared there before any lease depends on it.
// Client calls it at the first use, while the database answers promptly;
// Renew calls it again after a failure.
func (s *store) pin(ctx context.Context) {
	if !s.pinnable() {
		return
	}
	s.pinMu.Lock()
	defer s.pinMu.Unlock()
	if s.pinned != nil || s.closed {
		return
	}
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return
	}
	// A renewal and a release of a row that cannot exist: they change
	// nothing and leave both statements prepared on conn.
	warm := []keeper.Ref{{Key: "baton: warm-up (no such lock)", Owner: "", Aux: int64(-2)}}
	if _, err := s.renew(ctx, conn, warm, time.Second); err != nil || s.release(ctx, conn, warm) != nil {
		_ = conn.Close()
		return
	}
	s.pinned = conn
}

// unpin returns the renewal connection to the pool, for good (Close).
func (s *store) unpin() {
	s.pinMu.Lock()
	defer s.pinMu.Unlock()
	s.closed = true
	if s.pinned != nil {
		_ = s.pinned.Close()
		s.pinned = nil
	}
}

var _ keeper.Store = (*store)(nil)

// slotOf is the slot a keeper.Ref carries in Aux.
func slotOf(r keeper.Ref) int64 {
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

// Renew runs on the connection pinned for renewals when it is free (a
// late renewal may still hold it), else on the pool. The keeper then does
// not compete with acquires for connections, and its statement is already
// prepared: on a slow link a renewal that must open a connection (TCP,
// startup, prepare, execute) takes three or four flights, which at a
// latency of TTL/4 is more than the lease has left — a cancelled query of
// the caller's on the same pool (the driver closes that connection) was
// enough to lose every lease (drill row 8). After an error the pinned
// connection is dropped and pinned again, warm, at the next renewal.
func (s *store) Renew(ctx context.Context, refs []keeper.Ref, ttl time.Duration) ([]bool, error) {
	if !s.pinnable() || !s.pinMu.TryLock() {
		return s.renew(ctx, s.db, refs, ttl)
	}
	conn := s.pinned
	if conn == nil {
		s.pinMu.Unlock()
		r, err := s.renew(ctx, s.db, refs, ttl)
		if err == nil {
			s.pin(ctx) // the database answers again: pin a warm connection for the next rounds
		}
		return r, err
	}
	defer s.pinMu.Unlock()
	renewed, err := s.renew(ctx, conn, refs, ttl)
	if err != nil {
		_ = conn.Close() // maybe broken: the pool replaces it
		s.pinned = nil
	}
	return renewed, err
}

func (s *store) renew(ctx context.Context, db execQuerier, refs []keeper.Ref, ttl time.Duration) ([]bool, error) {
	mark := rand.Int64()
	var rows *sql.Rows
	switch s.q.d {
	case fence.MySQL:
		args := append(refArgs(nil, refs), ttl.Microseconds(), mark)
		res, err := db.ExecContext(ctx, s.q.renew(len(refs)), args...)
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

// Release runs on the pinned connection when it is free (see Renew), so
// that an abandoned grant is freed with a warm, prepared statement even
// when the pool's other connections were closed by cancelled queries.
func (s *store) Release(ctx context.Context, refs []keeper.Ref) error {
	if !s.pinnable() || !s.pinMu.TryLock() {
		return s.release(ctx, s.db, refs)
	}
	conn := s.pinned
	if conn == nil {
		s.pinMu.Unlock()
		return s.release(ctx, s.db, refs)
	}
	defer s.pinMu.Unlock()
	err := s.release(ctx, conn, refs)
	if err != nil {
		_ = conn.Close()
		s.pinned = nil
	}
	return err
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
		_, err = db.ExecContext(ctx, s.q.release(1), append(refArgs(nil, refs), s.q.locks)...)
	case s.q.d == fence.Postgres:
		names, slots, owners := refArrays(refs)
		_, err = db.ExecContext(ctx, s.q.pgRelease(), names, slots, owners, s.q.locks)
	default:
		_, err = db.ExecContext(ctx, s.q.release(len(refs)), refArgs(nil, refs)...)
	}
	if err != nil {
		return err
	}
	for _, r := range refs {
		s.c.hub().wake(r.Key)
	}
	return nil
}

// acquire makes one attempt at slot of name for owner, with a lease time
// of ttl on the database clock. ok is false when the row is held by
// another owner. An error leaves the outcome unknown: the caller hands
// owner to keeper.Abandon.
func (s *store) acquire(ctx context.Context, name string, slot int64, kind, owner string, ttl time.Duration) (token uint64, ok bool, err error) {
	if s.q.d == fence.Postgres {
		var tok int64
		err := s.db.QueryRowContext(ctx, s.q.pgAcquire(), name, slot, kind, owner, ttl.Microseconds()).Scan(&tok)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return 0, false, nil
		case err != nil:
			return 0, false, err
		}
		return uint64(tok), true, nil
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, false, err
	}
	defer tx.Rollback() //nolint:errcheck // after Commit it is a no-op; before it, the error is the one returned
	res, err := tx.ExecContext(ctx, s.q.txUpsert(), name, slot, kind, owner, ttl.Microseconds())
	if err != nil {
		return 0, false, err
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return 0, false, err // held by another owner (or the driver failed to say)
	}
	var tok int64
	if s.q.d == fence.MySQL {
		t, err := s.mysqlBump(ctx, tx)
		if err != nil {
			return 0, false, err
		}
		tok = int64(t)
	} else if err := tx.QueryRowContext(ctx, s.q.txBump()).Scan(&tok); err != nil {
		return 0, false, err
	}
	res, err = tx.ExecContext(ctx, s.q.txSetToken(), tok, name, slot, owner)
	if err != nil {
		return 0, false, err
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		// Not ours after all (MySQL with clientFoundRows reports a held
		// row as affected): roll back, the counter with it.
		return 0, false, err
	}
	if err := tx.Commit(); err != nil {
		return 0, false, fmt.Errorf("commit: %w", err)
	}
	return uint64(tok), true, nil
}

// Begin starts one acquire for package leasing: the Mutex's single row,
// or the rows of a multi-row recipe (see recipe.go).
func (s *store) Begin(req *leasing.Request) leasing.Attempts {
	if req.Kind == leasing.KindMutex {
		return s.c.mutexAttempts(req)
	}
	return s.c.recipeAttempts(req)
}

// Prepare creates (or checks) the schema at the client's first use.
func (s *store) Prepare(ctx context.Context) error { return s.c.ensureSchema(ctx) }

// Watch wakes at the next release of name seen by this process.
func (s *store) Watch(name string) (<-chan struct{}, func()) { return s.c.hub().watch(name) }

var (
	_ leasing.Store    = (*store)(nil)
	_ leasing.Preparer = (*store)(nil)
	_ leasing.Watcher  = (*store)(nil)
	_ leasing.Leaders  = (*store)(nil)
)
