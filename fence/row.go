package fence

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/baton-go/baton"
)

// Default column names of the row scheme.
const (
	DefaultTokenColumn = "fence_token"
	DefaultOwnerColumn = "fence_owner"
)

// Column is one column of a business row and its value: a key column in
// the WHERE clause of Row.Update, or a column it sets. The name is
// validated like a table name; the value is always sent as a parameter.
type Column struct {
	Name  string
	Value any
}

// Row is the token-column scheme (the first of the package doc's three SQL
// schemes): the fence lives on the business row itself, as two columns (fence_token,
// fence_owner), and the business update is the fence:
//
//	UPDATE orders SET status = ?, fence_token = ?, fence_owner = ?
//	WHERE order_id = ? AND (fence_token IS NULL OR fence_token < ?
//	      OR (fence_token = ? AND fence_owner = ?))
//
// It costs nothing beyond the write itself (no second table, no second
// row lock), which makes it the scheme of choice when the resource is one
// row that already exists. It fences updates only: create the row first
// (its fence columns NULL, "never fenced"), or use Table when writers also
// create rows.
//
// A Row is a plain value, safe for concurrent use. Table (the business
// table, or schema.table) and Dialect are required.
type Row struct {
	Table       string  // the business table, or schema.table
	Dialect     Dialect // required
	TokenColumn string  // "" means DefaultTokenColumn
	OwnerColumn string  // "" means DefaultOwnerColumn
	// Observer, if set, is told of every update refused as stale
	// (baton.EventStaleRejected, Resource "table(key=value…)"); nil
	// reports nothing.
	Observer baton.Observer
}

type rowSQL struct {
	d            *dialect
	table        string // quoted
	schema, name string // unquoted parts, schema "" when absent
	tok, own     string // quoted column names
	rawTok       string
	rawOwn       string
}

func (r Row) prepare() (*rowSQL, error) {
	d, err := dialectFor(r.Dialect)
	if err != nil {
		return nil, err
	}
	if r.Table == "" {
		return nil, invalid("Row.Table is empty")
	}
	table, err := tableName(r.Table, d)
	if err != nil {
		return nil, err
	}
	s := &rowSQL{d: d, table: table, rawTok: r.TokenColumn, rawOwn: r.OwnerColumn}
	if before, after, ok := strings.Cut(r.Table, "."); ok {
		s.schema, s.name = before, after
	} else {
		s.name = r.Table
	}
	if s.rawTok == "" {
		s.rawTok = DefaultTokenColumn
	}
	if s.rawOwn == "" {
		s.rawOwn = DefaultOwnerColumn
	}
	for _, c := range []string{s.rawTok, s.rawOwn} {
		if !validIdent(c) {
			return nil, invalid("column name %q is not an identifier of letters, digits and _", c)
		}
	}
	if strings.EqualFold(s.rawTok, s.rawOwn) {
		return nil, invalid("token and owner column are both %q", s.rawTok)
	}
	s.tok, s.own = d.quote(s.rawTok), d.quote(s.rawOwn)
	return s, nil
}

// Migrate adds the fence columns to the business table when they are
// missing: token BIGINT and owner TEXT (BLOB on MySQL, which compares bytes),
// both NULL for existing rows, meaning "never fenced": the first fenced
// write to such a row is accepted, as for a new resource in Table. Adding
// a nullable column without a default is a catalog-only change on all
// three databases, even on a large table. The table must exist.
//
// On MySQL and MariaDB, DDL commits the transaction it runs in; pass a
// *sql.DB there.
func (r Row) Migrate(ctx context.Context, q Querier) error {
	s, err := r.prepare()
	if err != nil {
		return err
	}
	var schema any // NULL: the current schema
	if s.schema != "" {
		schema = s.schema
	}
	for _, c := range []struct{ name, quoted, typ string }{
		{s.rawTok, s.tok, s.d.tokenType},
		{s.rawOwn, s.own, s.d.ownerType},
	} {
		var n int
		if err := q.QueryRowContext(ctx, s.d.columnExists, schema, s.name, c.name).Scan(&n); err != nil {
			return fmt.Errorf("fence: look up column %s of %s: %w", c.name, s.table, err)
		}
		if n > 0 {
			continue
		}
		if _, err := q.ExecContext(ctx, `ALTER TABLE `+s.table+` ADD COLUMN `+c.quoted+` `+c.typ); err != nil {
			return fmt.Errorf("fence: add column %s to %s: %w", c.name, s.table, err)
		}
	}
	return nil
}

// Update is one fenced write to a business row, inside tx: it sets the
// columns in set and the fence columns to (token, owner) on the row
// identified by key (column = value, all of them), provided the row's
// stored fence accepts the write (the rule of Accepts; a row whose fence
// columns are NULL accepts any write).
//
// It returns nil when the row was written; a *StaleError wrapping
// baton.ErrStaleToken, carrying the row's stored fence, when the fence
// refused it (nothing changed: roll tx back so your other writes in it go
// too); an error wrapping sql.ErrNoRows when no row matches key. The last
// two are told apart by reading the row's fence back in the same
// transaction after an update that affected no row (FOR UPDATE on
// PostgreSQL and MySQL). That read also makes the result independent of
// how the driver counts affected rows: MySQL counts a row set to the
// values it already had as unaffected unless the connection asks for
// found rows (clientFoundRows=true), and a repeated write (same token,
// owner and values) is then recognised by the row holding exactly it.
//
// key must identify one row (normally the primary key); set may be empty
// (only the fence moves) and must not name the fence columns. Invalid
// identifiers, an empty key, a token above MaxToken, a bad owner return an
// error wrapping baton.ErrInvalidOption before anything is sent.
func (r Row) Update(ctx context.Context, tx *sql.Tx, key, set []Column, token uint64, owner string) error {
	return r.update(ctx, tx, key, set, token, owner, false)
}

func (r Row) update(ctx context.Context, tx *sql.Tx, key, set []Column, token uint64, owner string, force bool) (err error) {
	defer func() { err = WithCause(ctx, err) }()
	if token > MaxToken {
		return invalid("token %d above the largest storable token %d", token, uint64(MaxToken))
	}
	if err := checkOwner(owner); err != nil {
		return err
	}
	s, err := r.prepare()
	if err != nil {
		return err
	}
	if len(key) == 0 {
		return invalid("Row.Update on %s without key columns would update every row", s.table)
	}
	seen := map[string]bool{strings.ToLower(s.rawTok): true, strings.ToLower(s.rawOwn): true}
	var b stmt
	b.d = s.d
	b.sql.WriteString(`UPDATE ` + s.table + ` SET `)
	for _, c := range set {
		if !validIdent(c.Name) {
			return invalid("column name %q is not an identifier of letters, digits and _", c.Name)
		}
		if seen[strings.ToLower(c.Name)] {
			return invalid("column %q set twice, or a fence column set directly", c.Name)
		}
		seen[strings.ToLower(c.Name)] = true
		b.sql.WriteString(s.d.quote(c.Name) + ` = ` + b.arg(c.Value) + `, `)
	}
	b.sql.WriteString(s.tok + ` = ` + b.arg(int64(token)) + `, ` + s.own + ` = ` + b.arg(owner))
	where, err := b.where(key)
	if err != nil {
		return err
	}
	b.sql.WriteString(where)
	if !force {
		b.sql.WriteString(` AND (` + s.tok + ` IS NULL OR ` + s.tok + ` < ` + b.arg(int64(token)) +
			` OR (` + s.tok + ` = ` + b.arg(int64(token)) + ` AND ` + s.own + ` = ` + b.arg(owner) + `))`)
	}
	res, err := tx.ExecContext(ctx, b.sql.String(), b.args...)
	if err != nil {
		return fmt.Errorf("fence: fenced update of %s: %w", s.table, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("fence: fenced update of %s: affected rows: %w", s.table, err)
	}
	if n > 0 {
		return nil
	}
	storedToken, storedOwner, fenced, err := s.current(ctx, tx, key, s.d.lockRead)
	switch {
	case err != nil:
		return err
	case fenced && storedToken == token && storedOwner == owner:
		return nil // MySQL without found rows: the row already held exactly this write
	case !fenced || force:
		// The row was not there for the UPDATE but is now (a concurrent
		// insert committed in between, at READ COMMITTED): not stale.
		return fmt.Errorf("fence: row of %s appeared during the fenced update; retry the transaction", s.table)
	}
	return rejected(ctx, r.Observer, &StaleError{Resource: describeKey(s.table, key), Token: token, Owner: owner, StoredToken: storedToken, StoredOwner: storedOwner})
}

// Current returns the fence stored on the row identified by key. fenced is
// false (and token, owner zero) when the row was never written through the
// fence; a missing row returns an error wrapping sql.ErrNoRows.
func (r Row) Current(ctx context.Context, q Querier, key []Column) (token uint64, owner string, fenced bool, err error) {
	s, err := r.prepare()
	if err != nil {
		return 0, "", false, err
	}
	return s.current(ctx, q, key, "")
}

func (s *rowSQL) current(ctx context.Context, q Querier, key []Column, suffix string) (uint64, string, bool, error) {
	if len(key) == 0 {
		return 0, "", false, invalid("no key columns for %s", s.table)
	}
	var b stmt
	b.d = s.d
	b.sql.WriteString(`SELECT ` + s.tok + `, ` + s.own + ` FROM ` + s.table)
	where, err := b.where(key)
	if err != nil {
		return 0, "", false, err
	}
	b.sql.WriteString(where + suffix)
	var tok sql.NullInt64
	var own sql.NullString
	if err := q.QueryRowContext(ctx, b.sql.String(), b.args...).Scan(&tok, &own); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return 0, "", false, fmt.Errorf("fence: no row %s: %w", describeKey(s.table, key), err)
		}
		return 0, "", false, fmt.Errorf("fence: read the fence of %s: %w", describeKey(s.table, key), err)
	}
	if !tok.Valid {
		return 0, "", false, nil
	}
	if tok.Int64 < 0 {
		return 0, "", false, fmt.Errorf("fence: negative token %d stored in %s", tok.Int64, describeKey(s.table, key))
	}
	return uint64(tok.Int64), own.String, true, nil
}

// UnfencedRow is the twin of Row without the fence: Update writes the row
// and records (token, owner) whatever the row holds, as an application that
// trusts its lock would. For negative controls only.
type UnfencedRow struct {
	Row Row
}

// Update is Row.Update without the rule: it never returns
// baton.ErrStaleToken.
func (u UnfencedRow) Update(ctx context.Context, tx *sql.Tx, key, set []Column, token uint64, owner string) error {
	return u.Row.update(ctx, tx, key, set, token, owner, true)
}

// stmt builds one statement with parameters numbered for its dialect.
type stmt struct {
	d    *dialect
	sql  strings.Builder
	args []any
}

func (b *stmt) arg(v any) string {
	b.args = append(b.args, v)
	return b.d.param(len(b.args))
}

func (b *stmt) where(key []Column) (string, error) {
	var w strings.Builder
	for i, c := range key {
		if !validIdent(c.Name) {
			return "", invalid("key column name %q is not an identifier of letters, digits and _", c.Name)
		}
		if i == 0 {
			w.WriteString(` WHERE `)
		} else {
			w.WriteString(` AND `)
		}
		w.WriteString(b.d.quote(c.Name) + ` = ` + b.arg(c.Value))
	}
	return w.String(), nil
}

// describeKey names a row for errors: table(col=value, …).
func describeKey(table string, key []Column) string {
	var w strings.Builder
	w.WriteString(table + "(")
	for i, c := range key {
		if i > 0 {
			w.WriteString(", ")
		}
		fmt.Fprintf(&w, "%s=%v", c.Name, c.Value)
	}
	w.WriteString(")")
	return w.String()
}
