package fence

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/baton-go/baton"
)

// DefaultTable is the token table's name when Table.Name is empty.
const DefaultTable = "fencing_tokens"

// Table is the fencing_tokens scheme (the second of the package doc's
// three SQL schemes): one row per resource holding the highest accepted (token, owner), advanced by
// a conditional upsert in the same transaction as the business write. It
// needs no change to the business tables, at the price of one more row
// lock per write: the fenced writers of one resource commit one at a time.
//
// The zero Name means DefaultTable. Dialect must be set (see DialectOf).
// A Table is a plain value, safe for concurrent use.
type Table struct {
	Name    string  // table name, or schema.table; "" means DefaultTable
	Dialect Dialect // required
	// Observer, if set, is told of every write refused as stale
	// (baton.EventStaleRejected); nil reports nothing. Accepted writes
	// are not reported.
	Observer baton.Observer
}

var _ Fence = Table{}

func (t Table) prepare() (*dialect, string, error) {
	d, err := dialectFor(t.Dialect)
	if err != nil {
		return nil, "", err
	}
	name, err := tableName(t.Name, d)
	if err != nil {
		return nil, "", err
	}
	return d, name, nil
}

// Migrate creates the token table if it does not exist:
// (resource TEXT PRIMARY KEY, token BIGINT ≥ 0, owner TEXT, updated_at).
// Pass a *sql.Tx to make it part of your own migration. On PostgreSQL two
// sessions creating the same table at the same moment can fail on a catalog
// unique constraint; run Migrate from one place (deployment, not every
// process start), or retry it. On MySQL and MariaDB, DDL commits the
// transaction it runs in, so pass a *sql.DB there.
func (t Table) Migrate(ctx context.Context, q Querier) error {
	d, name, err := t.prepare()
	if err != nil {
		return err
	}
	if _, err := q.ExecContext(ctx, d.create(name)); err != nil {
		return fmt.Errorf("fence: create table %s: %w", name, err)
	}
	return nil
}

// Advance checks the write (token, owner) against the fence of resource
// and advances it, inside tx, in one atomic statement. It accepts a token
// greater than the stored one, or equal to it from the same owner, and the
// first write for a resource. Otherwise it returns a *StaleError wrapping
// baton.ErrStaleToken and changes nothing; roll tx back then, so your own
// writes in it are discarded too.
//
// Call Advance before your business writes: on PostgreSQL it locks the
// fence row until tx ends, which serialises the fenced writers of resource
// and keeps a stale writer from even starting its writes. A token above
// MaxToken, an empty owner or a bad resource key returns an error wrapping
// baton.ErrInvalidOption before anything is sent; database errors are
// returned wrapped.
func (t Table) Advance(ctx context.Context, tx *sql.Tx, resource string, token uint64, owner string) error {
	return t.advance(ctx, tx, resource, token, owner, false)
}

func (t Table) advance(ctx context.Context, tx *sql.Tx, resource string, token uint64, owner string, force bool) (err error) {
	defer func() { err = WithCause(ctx, err) }()
	if err := checkWrite(resource, token, owner); err != nil {
		return err
	}
	d, name, err := t.prepare()
	if err != nil {
		return err
	}
	ok, err := d.advance(ctx, tx, d, name, resource, int64(token), owner, force)
	if err != nil {
		return fmt.Errorf("fence: advance %q to %d: %w", resource, token, err)
	}
	if ok {
		return nil
	}
	// Rejected. The conflicting row is still locked by this transaction
	// (PostgreSQL locks it even when the WHERE fails; SQLite holds the write
	// lock), so this read sees exactly what rejected us.
	storedToken, storedOwner, err := t.current(ctx, tx, resource, d.lockRead)
	if err != nil {
		return fmt.Errorf("fence: %q: token %d rejected; reading the stored token: %w", resource, token, err)
	}
	return rejected(ctx, t.Observer, &StaleError{Resource: resource, Token: token, Owner: owner, StoredToken: storedToken, StoredOwner: storedOwner})
}

// Current returns the (token, owner) stored for resource. For a resource
// never written it returns an error wrapping sql.ErrNoRows. Inside a
// transaction that has advanced the fence it sees that transaction's value.
func (t Table) Current(ctx context.Context, q Querier, resource string) (token uint64, owner string, err error) {
	return t.current(ctx, q, resource, "")
}

func (t Table) current(ctx context.Context, q Querier, resource, suffix string) (token uint64, owner string, err error) {
	if err := checkResource(resource); err != nil {
		return 0, "", err
	}
	d, name, err := t.prepare()
	if err != nil {
		return 0, "", err
	}
	var tok int64
	err = q.QueryRowContext(ctx, `SELECT token, owner FROM `+name+` WHERE resource = `+d.param(1)+suffix, resource).Scan(&tok, &owner)
	if err != nil {
		return 0, "", fmt.Errorf("fence: current token of %q: %w", resource, err)
	}
	if tok < 0 { // only possible in a table not made by Migrate
		return 0, "", fmt.Errorf("fence: negative token %d stored for %q", tok, resource)
	}
	return uint64(tok), owner, nil
}

// Max returns the highest token stored for any resource in the table, 0
// for an empty table. It is the number the token floor recovery procedure
// needs (see the package documentation).
func (t Table) Max(ctx context.Context, q Querier) (uint64, error) {
	_, name, err := t.prepare()
	if err != nil {
		return 0, err
	}
	var tok int64
	if err := q.QueryRowContext(ctx, `SELECT COALESCE(MAX(token), 0) FROM `+name).Scan(&tok); err != nil {
		return 0, fmt.Errorf("fence: max token: %w", err)
	}
	if tok < 0 {
		return 0, errors.New("fence: negative token stored")
	}
	return uint64(tok), nil
}

// Write runs one fenced write: it begins a transaction on db, advances the
// fence of resource, runs fn in the same transaction and commits. A stale
// token returns the *StaleError without calling fn; any error (from the
// fence, from fn, returned unchanged, or from the database) rolls the
// transaction back, so a rejected write changes nothing.
//
// fn should only write through tx and must not commit or roll it back.
// On SQLite, open db with _txlock=immediate (see the package
// documentation) so the transaction takes the write lock at BEGIN.
func (t Table) Write(ctx context.Context, db *sql.DB, resource string, token uint64, owner string, fn func(tx *sql.Tx) error) error {
	return write(ctx, db, t, resource, token, owner, fn)
}
