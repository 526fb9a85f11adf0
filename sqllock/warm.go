package sqllock

import (
	"context"
	"database/sql"
	"sync"
	"time"

	"github.com/baton-go/baton/engine/leasekit/keeper"
	"github.com/baton-go/baton/fence"
)

// warmConn is a connection of the pool kept for one kind of the keeper's
// requests, renewals or releases, with their statements prepared on it.
// Each kind has its own, so that neither waits behind the other or falls
// back to a cold connection of the pool because the other holds it.
type warmConn struct {
	spare int // pool connections left to the caller: pin only out of a pool larger than that
	// idleFirst: run on an idle connection of the pool when there is
	// one, and on w's only when there is none. Releases: a lease's
	// release then usually runs on the connection its acquire just
	// returned to the pool. Sent on the warm one instead, every
	// lock+unlock woke two server processes, which cost 15–30 % of an
	// uncontended PostgreSQL lock+unlock (166–208 against 238–250 µs,
	// and 77–91 against 98–101 µs of client CPU, three runs of 5,000 on
	// two cores). The warm one still serves a release when the pool has
	// nothing idle to lend, which is what it is kept for: no cold
	// connection opened for a release on a slow link.
	idleFirst bool
	mu        sync.Mutex // held while conn is in use or replaced
	conn      *sql.Conn
	closed    bool
}

// pinnable reports whether w may keep a connection of its own: on a
// network database (SQLite is embedded), and never out of a pool of
// w.spare or fewer, which it would starve.
func (w *warmConn) pinnable(s *store) bool { return w.pinnableIn(s, s.db.Stats()) }

func (w *warmConn) pinnableIn(s *store, st sql.DBStats) bool {
	n := st.MaxOpenConnections
	return s.q.d != fence.SQLite && (n == 0 || n > w.spare)
}

// poolFirst reports whether run goes to the pool without trying w's
// connection: w may not pin one, or (idleFirst) the pool has an idle one.
func (w *warmConn) poolFirst(s *store) bool {
	st := s.db.Stats()
	return !w.pinnableIn(s, st) || (w.idleFirst && st.Idle > 0)
}

// run runs f on w's connection when it is free, else on the pool. After
// an error there the connection is dropped and, unless ctx has ended, f
// runs once more on the pool: the server may have closed the connection
// while it sat pinned (a restart, pg_terminate_backend, an idle timeout),
// which the pool finds out before it lends a connection and a pinned one
// only at its next use; renewals and releases may run twice. After a
// success on the pool w pins a warm one again, as the database answers
// again.
//
// f is a func of refs rather than a closure over them: a lease's own
// release passes the method expression (*store).release, which costs no
// allocation.
func (w *warmConn) run(ctx context.Context, s *store, f func(*store, context.Context, execQuerier, []keeper.Ref) error, refs []keeper.Ref) error {
	if w.poolFirst(s) || !w.mu.TryLock() {
		return f(s, ctx, s.db, refs)
	}
	conn := w.conn
	if conn == nil {
		w.mu.Unlock()
		err := f(s, ctx, s.db, refs)
		if err == nil {
			w.pin(ctx, s)
		}
		return err
	}
	err := f(s, ctx, conn, refs)
	if err != nil {
		_ = conn.Close()
		w.conn = nil
	}
	w.mu.Unlock()
	if err != nil && ctx.Err() == nil {
		err = f(s, ctx, s.db, refs)
	}
	return err
}

// pin opens w's connection and runs an empty renewal and release on it,
// so that both statements are prepared there before any lease depends on
// them. Client calls it at the first use, while the database answers
// promptly; run calls it again after a failure.
func (w *warmConn) pin(ctx context.Context, s *store) {
	if !w.pinnable(s) {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.conn != nil || w.closed {
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
	w.conn = conn
}

// unpin returns w's connection to the pool, for good (Close).
func (w *warmConn) unpin() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	if w.conn != nil {
		_ = w.conn.Close()
		w.conn = nil
	}
}

// pin pins both warm connections.
func (s *store) pin(ctx context.Context) {
	s.renewConn.pin(ctx, s)
	s.releaseConn.pin(ctx, s)
}
