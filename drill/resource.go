package drill

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/fence"

	_ "modernc.org/sqlite" // the "sqlite" driver for OpenSQLite
)

// SQLiteDSN is the query string OpenSQLite uses: a busy timeout so writers
// of several processes queue instead of failing, WAL so readers do not
// block them, and _txlock=immediate so a fenced transaction takes the
// write lock at BEGIN (see package fence).
const SQLiteDSN = "?_pragma=busy_timeout(10000)&_pragma=journal_mode(wal)&_pragma=synchronous(normal)&_txlock=immediate"

// OpenSQLite opens (creating it if needed) the SQLite database file at
// path for a Counter. Several processes may open the same file.
func OpenSQLite(path string) (*sql.DB, error) {
	db, err := sql.Open("sqlite", "file:"+path+SQLiteDSN)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(4)
	return db, nil
}

// Counter is the resource of a drill: one integer in a real database that
// clients increment by read-modify-write (read v, then write v+1), as
// Jepsen's etcd lock test did. Under mutual exclusion every acknowledged
// increment shows in the final value; a stale holder's late write
// overwrites newer increments, so lost updates are countable.
//
// A fenced Counter reads and writes through fence.Table: the read advances
// the fence (so a holder that read cannot be overtaken by an older one) and
// the write is rejected with baton.ErrStaleToken when a newer token was
// used. An unfenced Counter writes directly, the negative control.
type Counter struct {
	DB     *sql.DB
	Name   string      // the resource key; also the Name of its events
	Fence  fence.Table // used when Fenced
	Fenced bool
}

// NewCounter creates the counter (and the fence table) if needed and sets
// it to 0. The counter's row lives in table drill_counter.
func NewCounter(ctx context.Context, db *sql.DB, dialect fence.Dialect, name string, fenced bool) (*Counter, error) {
	c := &Counter{DB: db, Name: name, Fence: fence.Table{Dialect: dialect}, Fenced: fenced}
	if err := c.Fence.Migrate(ctx, db); err != nil {
		return nil, err
	}
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS drill_counter (name VARCHAR(255) PRIMARY KEY, value BIGINT NOT NULL)`); err != nil {
		return nil, fmt.Errorf("drill: create counter table: %w", err)
	}
	p1, p2 := "?", "?"
	if dialect == fence.Postgres {
		p1, p2 = "$1", "$2"
	}
	if _, err := db.ExecContext(ctx, `DELETE FROM drill_counter WHERE name = `+p1, name); err != nil {
		return nil, fmt.Errorf("drill: reset counter: %w", err)
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO drill_counter (name, value) VALUES (`+p1+`, `+p2+`)`, name, 0); err != nil {
		return nil, fmt.Errorf("drill: reset counter: %w", err)
	}
	if _, err := db.ExecContext(ctx, `DELETE FROM `+fence.DefaultTable+` WHERE resource = `+p1, name); err != nil {
		return nil, fmt.Errorf("drill: reset fence: %w", err)
	}
	return c, nil
}

// OpenCounter returns the existing counter name on db without resetting
// it (a child process joining its parent's drill).
func OpenCounter(db *sql.DB, dialect fence.Dialect, name string, fenced bool) *Counter {
	return &Counter{DB: db, Name: name, Fence: fence.Table{Dialect: dialect}, Fenced: fenced}
}

func (c *Counter) params() (string, string) {
	if c.Fence.Dialect == fence.Postgres {
		return "$1", "$2"
	}
	return "?", "?"
}

// Value reads the counter without any fence (for the final check).
func (c *Counter) Value(ctx context.Context) (int64, error) {
	p1, _ := c.params()
	var v int64
	err := c.DB.QueryRowContext(ctx, `SELECT value FROM drill_counter WHERE name = `+p1, c.Name).Scan(&v)
	return v, err
}

// Read returns the counter as the holder of (token, owner) sees it.
func (c *Counter) Read(ctx context.Context, token uint64, owner string) (int64, error) {
	p1, _ := c.params()
	var v int64
	read := func(q interface {
		QueryRowContext(context.Context, string, ...any) *sql.Row
	}) error {
		return q.QueryRowContext(ctx, `SELECT value FROM drill_counter WHERE name = `+p1, c.Name).Scan(&v)
	}
	if !c.Fenced {
		return v, read(c.DB)
	}
	err := c.Fence.Write(ctx, c.DB, c.Name, token, owner, func(tx *sql.Tx) error { return read(tx) })
	return v, err
}

// Write stores value as the holder of (token, owner).
func (c *Counter) Write(ctx context.Context, token uint64, owner string, value int64) error {
	p1, p2 := c.params()
	q := `UPDATE drill_counter SET value = ` + p1 + ` WHERE name = ` + p2
	if !c.Fenced {
		_, err := c.DB.ExecContext(ctx, q, value, c.Name)
		return err
	}
	return c.Fence.Write(ctx, c.DB, c.Name, token, owner, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, q, value, c.Name)
		return err
	})
}

// RecordedRead is Read with its invoke and completion in rec.
func (c *Counter) RecordedRead(ctx context.Context, rec *Recorder, client string, token uint64, owner string) (int64, error) {
	op := rec.BeginValue(client, OpRead, c.Name, token, owner, nil)
	v, err := c.Read(ctx, token, owner)
	complete(op, err, &v)
	return v, err
}

// RecordedWrite is Write with its invoke and completion in rec.
func (c *Counter) RecordedWrite(ctx context.Context, rec *Recorder, client string, token uint64, owner string, value int64) error {
	op := rec.BeginValue(client, OpWrite, c.Name, token, owner, Int(value))
	err := c.Write(ctx, token, owner, value)
	complete(op, err, nil)
	return err
}

// Increment is one recorded read-modify-write: read, then write read+1.
func (c *Counter) Increment(ctx context.Context, rec *Recorder, client string, token uint64, owner string) error {
	v, err := c.RecordedRead(ctx, rec, client, token, owner)
	if err != nil {
		return err
	}
	return c.RecordedWrite(ctx, rec, client, token, owner, v+1)
}

// complete classifies a resource operation's result: a stale token is a
// definite rejection; any other error leaves the outcome unknown (a commit
// may have happened before its answer was lost).
func complete(op *Op, err error, v *int64) {
	switch {
	case err == nil:
		op.End(Ok, func(e *Event) {
			if v != nil {
				e.Value = Int(*v)
			}
		})
	case errors.Is(err, baton.ErrStaleToken):
		op.End(Fail, func(e *Event) { e.Detail = StaleDetail })
	default:
		op.Unknown(err)
	}
}
