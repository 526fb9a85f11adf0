package sqllock

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// liteConn is a connection of an SQLite pool kept for the mutex's
// attempts and releases, with their statements prepared on it once, and
// its transaction's BEGIN IMMEDIATE, COMMIT and ROLLBACK as statements of
// its own. A statement prepared on the pool (*sql.DB) is re-bound to
// each transaction (Tx.StmtContext) and looked up per connection, and a
// database/sql transaction costs a context, a goroutine watching it and
// the pool's bookkeeping: together about a quarter of an uncontended
// lock+unlock's allocations. One attempt or release uses it at a time;
// the others run on the pool as before (liteAcquire's pool path).
//
// Only the BEGIN runs under the attempt's context. It is the one step
// that waits, for the database file's write lock (the busy timeout), so
// it is the one the attempt timeout and Close must be able to cut, and
// they do, as before. The take, the counter's bump and the COMMIT run
// on a context that cannot end: they run while the transaction holds the
// write lock, in this process, in microseconds, with no network to
// stall them, and SQLite's busy timeout bounds any wait they might still
// meet. The driver starts a goroutine to watch every statement whose
// context can end (modernc.org/sqlite's interruptOnDone), which was the
// largest single cost of an uncontended attempt, and cutting a statement
// there would buy nothing but a transaction to roll back.
type liteConn struct {
	mu     sync.Mutex // held while the connection is in use or replaced
	conn   *sql.Conn
	closed bool
	st     liteStmts
}

// liteStmts are the statements prepared on a liteConn.
type liteStmts struct {
	begin, take, bump, commit, rollback, release *sql.Stmt
}

// all lists the statements, for Close.
func (l *liteStmts) all() []*sql.Stmt {
	return []*sql.Stmt{l.begin, l.take, l.bump, l.commit, l.rollback, l.release}
}

// liteSpare is how many connections of a limited pool the pinned one
// leaves to everything else (renewals, recipes, Inspect).
const liteSpare = 2

// grab returns l locked with its connection, opening and preparing it at
// the first use, or false when another attempt holds it, the client is
// closed, the pool is too small to spare it, or it cannot be opened (the
// caller then runs on the pool).
func (l *liteConn) grab(ctx context.Context, s *store) bool {
	if n := s.db.Stats().MaxOpenConnections; n != 0 && n <= liteSpare {
		return false
	}
	if !l.mu.TryLock() {
		return false
	}
	if dbClosed(s.db) {
		// The caller closed the *sql.DB under the client: a pinned
		// connection outlives it, and would go on granting and freeing.
		if l.conn != nil {
			l.drop()
		}
		l.mu.Unlock()
		return false
	}
	if l.conn == nil && (l.closed || !l.open(ctx, s)) {
		l.mu.Unlock()
		return false
	}
	return true
}

// open pins a connection and prepares the statements on it.
func (l *liteConn) open(ctx context.Context, s *store) bool {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return false
	}
	var st liteStmts
	for _, p := range []struct {
		to **sql.Stmt
		q  string
	}{
		{&st.begin, "BEGIN IMMEDIATE"}, {&st.take, s.q.hot.liteTake}, {&st.bump, s.q.hot.liteBump},
		{&st.commit, "COMMIT"}, {&st.rollback, "ROLLBACK"}, {&st.release, s.q.hot.release1},
	} {
		if *p.to, err = conn.PrepareContext(ctx, p.q); err != nil {
			closeStmts(st.all())
			_ = conn.Close()
			return false
		}
	}
	l.conn, l.st = conn, st
	return true
}

func closeStmts(sts []*sql.Stmt) {
	for _, st := range sts {
		if st != nil {
			_ = st.Close()
		}
	}
}

// discard closes the connection instead of returning it to the pool: it
// may be inside a transaction that could not be rolled back. l is held.
func (l *liteConn) discard() {
	closeStmts(l.st.all())
	_ = l.conn.Raw(func(any) error { return driver.ErrBadConn }) // the pool closes a bad connection
	_ = l.conn.Close()
	l.conn, l.st = nil, liteStmts{}
}

// endedCtx is a context ended from the start, for dbClosed.
var endedCtx = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()

// dbClosed reports whether db was closed, without touching a
// connection: database/sql's DB.Conn answers "database is closed" before
// it looks at its context, and an ended context is all it looks at then.
func dbClosed(db *sql.DB) bool {
	c, err := db.Conn(endedCtx)
	if c != nil {
		_ = c.Close()
	}
	return err != nil && !errors.Is(err, context.Canceled)
}

// drop closes the statements and returns the connection to the pool.
// l is held.
func (l *liteConn) drop() {
	closeStmts(l.st.all())
	_ = l.conn.Close()
	l.conn, l.st = nil, liteStmts{}
}

// unpin closes the statements and returns the connection to the pool,
// for good (Close). An attempt on it ends first: its BEGIN is cut by
// the client's context, the rest does not wait.
func (l *liteConn) unpin() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	if l.conn != nil {
		l.drop()
	}
}

// acquire is liteAcquire's transaction on l's connection (see liteConn
// for its contexts). l is held.
func (l *liteConn) acquire(ctx context.Context, s *store, name, owner any, ttl time.Duration) (token uint64, ok bool, err error) {
	if _, err := l.st.begin.ExecContext(ctx); err != nil {
		// Timed out waiting for the write lock, no transaction open; or
		// cut by ctx, and one that began as ctx ended may be.
		if ctx.Err() != nil {
			l.rollback()
		}
		return 0, false, tookNothing{err}
	}
	bg := context.Background()
	var tok int64
	err = l.st.take.QueryRowContext(bg, name, int64(0), argMutex, owner, s.c.micros(ttl), s.c.holder).Scan(&tok)
	if err == nil {
		_, err = l.st.bump.ExecContext(bg)
	}
	if err == nil {
		if _, err = l.st.commit.ExecContext(bg); err != nil {
			err = fmt.Errorf("commit: %w", err)
		}
	}
	switch {
	case err == nil:
		return uint64(tok), true, nil
	case errors.Is(err, sql.ErrNoRows):
		err = nil // held by another owner
	}
	l.rollback()
	return 0, false, err
}

// tookNothing is an attempt's error that is known to have left nothing
// to free: its transaction never began (SQLite's BEGIN waited in vain
// for the database file's write lock, or was cut), so its take never
// ran. The attempt is not forgotten (keeper.Abandon): an owner-checked
// release of a row that cannot be there would only queue behind the
// same write lock, and Close would then spend its release bound on it.
type tookNothing struct{ error }

func (e tookNothing) Unwrap() error { return e.error }

// rollback ends the open transaction, if any; a connection whose
// rollback fails otherwise than for want of a transaction is discarded
// (it may still hold the write lock, and must not go back to the pool),
// and the next attempt pins another.
func (l *liteConn) rollback() {
	_, err := l.st.rollback.ExecContext(context.Background())
	if err != nil && !strings.Contains(err.Error(), "no transaction is active") {
		l.discard()
	}
}
