package embedded

import (
	"context"
	"database/sql/driver"
	"errors"
)

// errUnsupported: the wrapped driver lacks a context-aware method the
// wrapper forwards to. modernc.org/sqlite has them all.
var errUnsupported = errors.New("embedded: driver method not supported")

// conn passes every statement through its Link, except those inside a
// transaction already begun (see Link). database/sql uses a conn from one
// goroutine at a time, so inTx needs no lock.
type conn struct {
	inner driver.Conn
	link  *Link
	inTx  bool
}

func (c *conn) gate(ctx context.Context) error {
	if c.inTx {
		return nil
	}
	return c.link.pass(ctx)
}

func (c *conn) Prepare(query string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), query)
}

func (c *conn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	if err := c.gate(ctx); err != nil {
		return nil, err
	}
	p, ok := c.inner.(driver.ConnPrepareContext)
	if !ok {
		return nil, errUnsupported
	}
	s, err := p.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	return &stmt{inner: s, conn: c}, nil
}

func (c *conn) Close() error { return c.inner.Close() }

func (c *conn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}

func (c *conn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	if err := c.gate(ctx); err != nil {
		return nil, err
	}
	b, ok := c.inner.(driver.ConnBeginTx)
	if !ok {
		return nil, errUnsupported
	}
	t, err := b.BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	c.inTx = true
	return &tx{inner: t, conn: c}, nil
}

func (c *conn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	if err := c.gate(ctx); err != nil {
		return nil, err
	}
	e, ok := c.inner.(driver.ExecerContext)
	if !ok {
		return nil, driver.ErrSkip
	}
	return e.ExecContext(ctx, query, args)
}

func (c *conn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	if err := c.gate(ctx); err != nil {
		return nil, err
	}
	q, ok := c.inner.(driver.QueryerContext)
	if !ok {
		return nil, driver.ErrSkip
	}
	return q.QueryContext(ctx, query, args)
}

func (c *conn) Ping(ctx context.Context) error {
	if err := c.gate(ctx); err != nil {
		return err
	}
	if p, ok := c.inner.(driver.Pinger); ok {
		return p.Ping(ctx)
	}
	return nil
}

func (c *conn) ResetSession(ctx context.Context) error {
	if r, ok := c.inner.(driver.SessionResetter); ok {
		return r.ResetSession(ctx)
	}
	return nil
}

func (c *conn) IsValid() bool {
	if v, ok := c.inner.(driver.Validator); ok {
		return v.IsValid()
	}
	return true
}

type tx struct {
	inner driver.Tx
	conn  *conn
}

func (t *tx) Commit() error {
	t.conn.inTx = false
	return t.inner.Commit()
}

func (t *tx) Rollback() error {
	t.conn.inTx = false
	return t.inner.Rollback()
}

type stmt struct {
	inner driver.Stmt
	conn  *conn
}

func (s *stmt) Close() error  { return s.inner.Close() }
func (s *stmt) NumInput() int { return s.inner.NumInput() }

func (s *stmt) Exec(args []driver.Value) (driver.Result, error) {
	return nil, errUnsupported // database/sql calls ExecContext
}

func (s *stmt) Query(args []driver.Value) (driver.Rows, error) {
	return nil, errUnsupported // database/sql calls QueryContext
}

func (s *stmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	if err := s.conn.gate(ctx); err != nil {
		return nil, err
	}
	e, ok := s.inner.(driver.StmtExecContext)
	if !ok {
		return nil, errUnsupported
	}
	return e.ExecContext(ctx, args)
}

func (s *stmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	if err := s.conn.gate(ctx); err != nil {
		return nil, err
	}
	q, ok := s.inner.(driver.StmtQueryContext)
	if !ok {
		return nil, errUnsupported
	}
	return q.QueryContext(ctx, args)
}
