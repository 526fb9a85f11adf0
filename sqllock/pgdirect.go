package sqllock

import (
	"context"
	"database/sql/driver"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
)

// pgToken runs one of PostgreSQL's attempt statements, which answer the
// granted token or no row (sql.ErrNoRows: refused).
//
// On pgx it runs on pgx's own connection (sql.Conn.Raw): database/sql
// starts a goroutine for every query result whose context can end, to
// close the rows when it does, and an attempt's context always has a
// deadline, so each attempt started a goroutine and woke an idle
// processor for it; pgx watches the context with context.AfterFunc
// instead. An uncontended lock+unlock's client CPU went from 144–154 to
// 124–140 µs/op (BenchmarkSQL/postgres/lock, three runs each), and its
// allocations from 69 to 58. As database/sql would, a connection
// that failed before the statement was sent (pgconn.SafeToRetry) is
// discarded and the statement retried on another, twice at most. Other
// drivers (lib/pq) keep database/sql's path.
func (c *Client) pgToken(ctx context.Context, query string, args ...any) (tok int64, err error) {
	if _, ok := c.db.Driver().(*stdlib.Driver); !ok {
		err = c.db.QueryRowContext(ctx, query, args...).Scan(&tok)
		return tok, err
	}
	for try := 0; ; try++ {
		var retry bool
		if tok, retry, err = c.pgTokenOnce(ctx, query, args); !retry || try == 2 {
			return tok, err
		}
	}
}

// pgTokenOnce is one try of pgToken on one pooled connection; retry is
// set when the connection failed before the statement reached the server
// (it is then discarded).
func (c *Client) pgTokenOnce(ctx context.Context, query string, args []any) (tok int64, retry bool, err error) {
	conn, err := c.db.Conn(ctx)
	if err != nil {
		return 0, false, err
	}
	defer conn.Close()
	_ = conn.Raw(func(dc any) error {
		pc, ok := dc.(*stdlib.Conn)
		if !ok { // stdlib.Driver opens only *stdlib.Conn
			err = fmt.Errorf("sqllock: a pgx driver connection of type %T", dc)
			return nil
		}
		err = pc.Conn().QueryRow(ctx, query, args...).Scan(&tok)
		if err != nil && pgconn.SafeToRetry(err) {
			retry = true
			return driver.ErrBadConn // database/sql discards the connection
		}
		return nil
	})
	return tok, retry, err
}
