package fence

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"strings"
	"unicode/utf8"

	"github.com/baton-go/baton"
)

// Fence checks a write's fencing token at the resource, inside the caller's
// own transaction. Table is the real fence; Unfenced is its twin that
// accepts everything, for negative controls and demonstrations.
//
// Advance takes a *sql.Tx, not something that may run in autocommit mode, on
// purpose: a fence advanced in one transaction and a business write
// committed in another leave the check-then-write race open again: a newer
// holder can advance the fence between the two commits, and the stale
// write lands anyway. Only a transaction makes the two one atomic step.
type Fence interface {
	Advance(ctx context.Context, tx *sql.Tx, resource string, token uint64, owner string) error
}

// Querier is what Migrate, Current and Max need: *sql.DB, *sql.Tx and
// *sql.Conn all satisfy it, so these can run inside the caller's own
// transaction or on a pinned connection.
type Querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// MaxToken is the largest token a SQL fence stores. Tokens are uint64 in
// baton, but PostgreSQL's BIGINT, SQLite's INTEGER and database/sql's int64
// are signed; a larger token is refused with baton.ErrInvalidOption rather
// than stored in a form that compares wrongly. No engine reaches it in
// practice (a token floor near 2^63 would be a configuration error).
const MaxToken = math.MaxInt64

// MaxResourceLen is the longest resource key a fence accepts, in bytes. It
// matches baton.MaxNameLen so a lock name can always serve as the resource
// key, and keeps the key well inside every database's index-entry limit.
const MaxResourceLen = 1024

// MaxOwnerLen is the longest owner identity a fence accepts, in bytes:
// every dialect must store it whole, since a truncated owner could make
// two grants look like one. baton's own owner IDs are 32 bytes.
const MaxOwnerLen = 1024

// StaleError is the error a fence returns for a rejected write. It wraps
// baton.ErrStaleToken (test with errors.Is) and carries what the resource
// had already accepted, for logs and for the operator who has to decide
// whether a token floor is needed (errors.As gives access to the fields).
//
// A rejected write changed nothing at the fence; the caller must roll back
// its transaction so its own business writes are discarded too (Write does
// that).
//
// A write made with a lease's context after this process learnt that the
// lease was lost never reaches the fence and is no StaleError: its error
// wraps the context's cause, baton.ErrLost (see WithCause).
type StaleError struct {
	// Name is the lock the rejected write was made under, when the fence
	// could tell (LockName of the write's context: the lease's context, or
	// one made by WithLockName); "" otherwise.
	Name        string
	Resource    string
	Token       uint64 // the rejected write's token
	Owner       string // the rejected write's owner
	StoredToken uint64 // the token the resource had accepted
	StoredOwner string // the owner that wrote StoredToken
}

// Error names the resource, the rejected write and what the resource had
// accepted.
func (e *StaleError) Error() string {
	lock := ""
	if e.Name != "" {
		lock = fmt.Sprintf(" under lock %q", e.Name)
	}
	return fmt.Sprintf("fence: stale write to %q%s: token %d (owner %q) after token %d (owner %q): %v",
		e.Resource, lock, e.Token, e.Owner, e.StoredToken, e.StoredOwner, baton.ErrStaleToken)
}

// Unwrap returns baton.ErrStaleToken.
func (e *StaleError) Unwrap() error { return baton.ErrStaleToken }

// Accepts reports whether the fence rule lets a write (token, owner) through
// when the resource stores (storedToken, storedOwner): a greater token, or
// an equal token from the same owner (one grant writing repeatedly). An
// equal token from another owner is stale: two grants can only share a
// token when a counter was rewound (a Redis failover, a rebuilt engine), and
// then the newcomer must not overwrite a write it cannot be ordered after.
//
// Every dialect implements this rule in SQL; Accepts states it once in Go
// for scripts, object stores and tests.
func Accepts(storedToken uint64, storedOwner string, token uint64, owner string) bool {
	return token > storedToken || (token == storedToken && owner == storedOwner)
}

// write is Table.Write and Unfenced.Write: one transaction that advances
// the fence first and runs fn only if the write is not stale. An error
// after ctx ended carries its cause (WithCause).
func write(ctx context.Context, db *sql.DB, f Fence, resource string, token uint64, owner string, fn func(*sql.Tx) error) (err error) {
	defer func() { err = WithCause(ctx, err) }()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("fence: begin: %w", err)
	}
	committed := false
	defer func() {
		if !committed {
			_ = tx.Rollback() // the error that brought us here is the one to report
		}
	}()
	if err := f.Advance(ctx, tx, resource, token, owner); err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		return err
	}
	committed = true // after a failed Commit the transaction is over either way
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("fence: commit: %w", err)
	}
	return nil
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("fence: "+format+": %w", append(args, baton.ErrInvalidOption)...)
}

// checkWrite validates the arguments of a fenced write. An empty owner is
// refused because two callers that both forgot it would count as one grant
// and pass each other's equal-token check.
func checkWrite(resource string, token uint64, owner string) error {
	if err := checkResource(resource); err != nil {
		return err
	}
	if token > MaxToken {
		return invalid("token %d above the largest storable token %d", token, uint64(MaxToken))
	}
	if err := checkOwner(owner); err != nil {
		return fmt.Errorf("resource %q: %w", resource, err)
	}
	return nil
}

func checkOwner(owner string) error {
	switch {
	case owner == "":
		return invalid("empty owner")
	case len(owner) > MaxOwnerLen:
		return invalid("owner longer than %d bytes", MaxOwnerLen)
	case !utf8.ValidString(owner) || strings.IndexByte(owner, 0) >= 0:
		return invalid("owner %q is not valid UTF-8 text without NUL", owner)
	}
	return nil
}

// checkResource refuses keys that some database would reject with an
// opaque error (PostgreSQL TEXT cannot hold NUL or invalid UTF-8).
func checkResource(resource string) error {
	switch {
	case resource == "":
		return invalid("empty resource")
	case len(resource) > MaxResourceLen:
		return invalid("resource longer than %d bytes", MaxResourceLen)
	case !utf8.ValidString(resource) || strings.IndexByte(resource, 0) >= 0:
		return invalid("resource %q is not valid UTF-8 text without NUL", resource)
	}
	return nil
}
