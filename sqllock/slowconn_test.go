package sqllock_test

import (
	"context"
	"database/sql"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/baton-go/baton/batontest/testenv"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// slowDial makes one PostgreSQL connection's requests reach the server
// late, as a congested network or a busy server would, while the other
// connections (the pinned one, a cancel request's) stay prompt.
type slowDial struct {
	delay time.Duration
	armed atomic.Bool
	sent  chan struct{} // closed at the write that turned a connection slow
}

// openSlowPG opens a pgx *sql.DB on BATON_TEST_POSTGRES whose connections
// go through d.
func openSlowPG(t testing.TB, d *slowDial) *sql.DB {
	t.Helper()
	cfg, err := pgx.ParseConfig(testenv.Postgres(t))
	if err != nil {
		t.Fatalf("pgx.ParseConfig() = %v", err)
	}
	var dialer net.Dialer
	cfg.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dialer.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &slowConn{Conn: c, d: d}, nil
	}
	db := stdlib.OpenDB(*cfg)
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// slowConn is a connection whose first write after its slowDial was
// armed, and every later write, reach the server delay after they were
// made. The driver sees them written at once: a cancelled request was
// already on its way.
type slowConn struct {
	net.Conn
	d    *slowDial
	once sync.Once
	q    chan []byte   // the held writes, while slow
	done chan struct{} // closed when the forwarder has sent them all
}

func (c *slowConn) Write(p []byte) (int, error) {
	if c.q == nil && c.d.armed.CompareAndSwap(true, false) {
		c.q, c.done = make(chan []byte, 64), make(chan struct{})
		go c.forward() // owned by the connection: ends at Close
		defer close(c.d.sent)
	}
	if c.q == nil {
		return c.Conn.Write(p)
	}
	c.q <- append([]byte(nil), p...)
	return len(p), nil
}

// forward sends the held writes, each delay after it was made.
func (c *slowConn) forward() {
	defer close(c.done)
	for b := range c.q {
		time.Sleep(c.d.delay)
		_, _ = c.Conn.Write(b)
	}
}

// SetDeadline bounds reads only once slow: the driver's cancel sets a
// past deadline, which must not stop the held writes.
func (c *slowConn) SetDeadline(t time.Time) error {
	if c.q != nil {
		return c.Conn.SetReadDeadline(t)
	}
	return c.Conn.SetDeadline(t)
}

// Close sends the held writes first, as a closed socket still delivers
// what was written before it.
func (c *slowConn) Close() error {
	c.once.Do(func() {
		if c.q != nil {
			close(c.q)
			<-c.done
		}
	})
	return c.Conn.Close()
}
