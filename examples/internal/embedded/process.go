package embedded

import (
	"context"
	"database/sql"
	"errors"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/fence"
	"github.com/baton-go/baton/sqllock"
)

// Process is one simulated process of a story: its own connection pool to
// a database file, through a Link so that the story can freeze or cut it,
// and its own lock client on that pool.
type Process struct {
	DB    *sql.DB
	Link  *Link
	Locks *baton.Client
}

// OpenProcess opens the database file name in dir through a new Link, and
// a lock client on it with opts (the SQLite dialect is set here). The lock
// tables are migrated now, not at the first acquire, where all of a
// story's processes would race to create them.
func OpenProcess(ctx context.Context, dir, name string, opts sqllock.Options) (*Process, error) {
	db, link, err := OpenLink(dir, name)
	if err != nil {
		return nil, err
	}
	opts.Dialect = fence.SQLite
	locks, err := sqllock.New(db, opts)
	if err == nil {
		sc, _ := baton.As[*sqllock.Client](locks) // the SQL engine's own Migrate
		if err = sc.Migrate(ctx); err != nil {
			err = errors.Join(err, locks.Close())
		}
	}
	if err != nil {
		return nil, errors.Join(err, db.Close())
	}
	return &Process{DB: db, Link: link, Locks: locks}, nil
}

// Close ends the process. Its Link is restored and thawed first, so that
// nothing it started stays blocked and its lock client can release what
// it still holds.
func (p *Process) Close() error {
	p.Link.Restore()
	p.Link.Thaw()
	return errors.Join(p.Locks.Close(), p.DB.Close())
}
