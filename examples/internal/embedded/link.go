package embedded

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"sync"
)

// ErrUnreachable is what every statement of a cut Link fails with, as a
// database server that is down or partitioned away would make it fail.
var ErrUnreachable = errors.New("embedded: database unreachable (simulated)")

// Link is one simulated process's connection to a database: its own
// *sql.DB, whose statements an example can freeze (the process is paused:
// nothing it sends arrives, its lease keeper's renewals included) or cut
// (the database cannot be reached: every statement fails at once).
//
// A freeze lets a transaction already begun run to its end, so that a
// paused process never holds SQLite's one write lock and stalls the
// others; everything else waits until Thaw or until the statement's
// context ends. A process that is never thawed has been killed.
type Link struct {
	mu     sync.Mutex
	frozen chan struct{} // non-nil while frozen; closed by Thaw
	cut    bool
}

// OpenLink opens the database file name in dir through a new Link.
func OpenLink(dir, name string) (*sql.DB, *Link, error) {
	probe, err := sql.Open("sqlite", "")
	if err != nil {
		return nil, nil, err
	}
	drv := probe.Driver() // the registered driver; probe never connects
	_ = probe.Close()
	l := &Link{}
	return sql.OpenDB(&connector{dsn: DSN(dir, name), drv: drv, link: l}), l, nil
}

// Freeze pauses the process: its statements wait from now on.
func (l *Link) Freeze() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.frozen == nil {
		l.frozen = make(chan struct{})
	}
}

// Thaw resumes a frozen process: waiting statements go ahead.
func (l *Link) Thaw() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.frozen != nil {
		close(l.frozen)
		l.frozen = nil
	}
}

// Cut makes the database unreachable: statements fail with ErrUnreachable.
func (l *Link) Cut() { l.setCut(true) }

// Restore makes a cut database reachable again.
func (l *Link) Restore() { l.setCut(false) }

func (l *Link) setCut(v bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.cut = v
}

// pass blocks while the link is frozen and fails while it is cut.
func (l *Link) pass(ctx context.Context) error {
	for {
		l.mu.Lock()
		frozen, cut := l.frozen, l.cut
		l.mu.Unlock()
		if cut {
			return ErrUnreachable
		}
		if frozen == nil {
			return nil
		}
		select {
		case <-frozen:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

type connector struct {
	dsn  string
	drv  driver.Driver
	link *Link
}

func (c *connector) Connect(ctx context.Context) (driver.Conn, error) {
	if err := c.link.pass(ctx); err != nil {
		return nil, err
	}
	inner, err := c.drv.Open(c.dsn)
	if err != nil {
		return nil, err
	}
	return &conn{inner: inner, link: c.link}, nil
}

func (c *connector) Driver() driver.Driver { return c.drv }
