package fence

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/baton-go/baton"
)

// ObjectStore is what the object-store pattern needs of a store that has
// no conditional writes (many S3-compatible stores, NFS, a blob container
// used plainly): put a whole object, list by prefix, delete. Object names
// are slash-separated paths.
//
// Put must make the object appear whole or not at all (cloud stores do;
// DirStore writes a temporary file and renames it).
type ObjectStore interface {
	Put(ctx context.Context, name string, data io.Reader) error
	// List returns every object whose name starts with prefix, in any
	// order, with the time it was last written.
	List(ctx context.Context, prefix string) ([]ObjectInfo, error)
	// Delete removes an object; deleting a missing object is not an error.
	Delete(ctx context.Context, name string) error
}

// ObjectInfo describes one stored object.
type ObjectInfo struct {
	Name    string
	Size    int64
	ModTime time.Time
}

// DefaultPointerTable is the pointer table's name when Publisher.Table is
// empty.
const DefaultPointerTable = "fence_pointers"

// Publisher is the object-store pattern: an object store without
// conditional writes cannot refuse a stale write, so nobody overwrites the published
// object. Each grant writes its result as a new object named after its
// token (ObjectName: "<name>/<token>-<owner tag>"), then publishes a pointer
// to it in a database row that is fenced (the Row scheme, so the rule of
// Accepts). A stale holder can still upload, but its pointer is refused:
// it leaves only an orphan, which Orphans lists for cleanup. Readers
// follow the pointer (Published), never list the store.
//
// The pointer table (Migrate creates it) has one row per name: (name,
// object, fence_token, fence_owner). Store, Dialect are required; the
// zero Table means DefaultPointerTable. A Publisher is a plain value, safe
// for concurrent use as far as its Store is.
type Publisher struct {
	Store   ObjectStore
	Table   string // pointer table, or schema.table; "" means DefaultPointerTable
	Dialect Dialect
	// Observer, if set, is told of every publish refused as stale
	// (baton.EventStaleRejected, Resource the object's name); nil
	// reports nothing.
	Observer baton.Observer
}

// Pointer is a published pointer: the object the name stands for and the
// write that published it.
type Pointer struct {
	Object string
	Token  uint64
	Owner  string
}

func (p Publisher) row() Row {
	t := p.Table
	if t == "" {
		t = DefaultPointerTable
	}
	return Row{Table: t, Dialect: p.Dialect}
}

// Migrate creates the pointer table if it does not exist. On MySQL and
// MariaDB pass a *sql.DB (DDL commits a transaction).
func (p Publisher) Migrate(ctx context.Context, q Querier) error {
	s, err := p.row().prepare()
	if err != nil {
		return err
	}
	obj := "TEXT"
	if s.d == &mysql {
		obj = "BLOB"
	}
	ddl := `CREATE TABLE IF NOT EXISTS ` + s.table + ` (
	name   ` + s.d.keyType + ` NOT NULL PRIMARY KEY,
	object ` + obj + ` NOT NULL,
	` + s.tok + ` ` + s.d.tokenType + ` CHECK (` + s.tok + ` >= 0),
	` + s.own + ` ` + s.d.ownerType + `
)`
	if _, err := q.ExecContext(ctx, ddl); err != nil {
		return fmt.Errorf("fence: create table %s: %w", s.table, err)
	}
	return nil
}

// ObjectName is the object a write (token, owner) of name goes to:
// "<name>/<token>-<owner tag>", the tag being 16 hex digits of the owner's
// SHA-256. The token makes every grant write a new object; the owner tag
// keeps two grants that share a token (a rewound counter: the equal-token
// case of the rule) from overwriting each other's object, since the store
// itself cannot refuse anything.
func ObjectName(name string, token uint64, owner string) string {
	sum := sha256.Sum256([]byte(owner))
	return name + "/" + strconv.FormatUint(token, 10) + "-" + hex.EncodeToString(sum[:8])
}

// parseObjectName returns the token of an object of name, and whether the
// object is one ObjectName makes for name (not a deeper name's object).
func parseObjectName(name, object string) (uint64, bool) {
	rest, ok := strings.CutPrefix(object, name+"/")
	if !ok || strings.Contains(rest, "/") {
		return 0, false
	}
	tok, tag, ok := strings.Cut(rest, "-")
	if !ok || len(tag) != 16 {
		return 0, false
	}
	if _, err := hex.DecodeString(tag); err != nil {
		return 0, false
	}
	t, err := strconv.ParseUint(tok, 10, 64)
	if err != nil || strconv.FormatUint(t, 10) != tok {
		return 0, false
	}
	return t, true
}

// checkObjectName accepts names usable both as a resource key and as an
// object path prefix: no empty, "." or ".." segment, no leading slash.
func checkObjectName(name string) error {
	if err := checkResource(name); err != nil {
		return err
	}
	for _, seg := range strings.Split(name, "/") {
		if seg == "" || seg == "." || seg == ".." || strings.Contains(seg, `\`) {
			return invalid("object name %q: empty, \".\" or \"..\" segment, or a backslash", name)
		}
	}
	return nil
}

// Put uploads data as the temporary object of the write (token, owner) of
// name and returns the object's name. Nothing points to it until Publish.
// A token above MaxToken or a bad owner or name is refused with
// baton.ErrInvalidOption before anything is uploaded.
func (p Publisher) Put(ctx context.Context, name string, token uint64, owner string, data io.Reader) (string, error) {
	if err := p.check(name, token, owner); err != nil {
		return "", err
	}
	object := ObjectName(name, token, owner)
	if err := p.Store.Put(ctx, object, data); err != nil {
		return "", fmt.Errorf("fence: put %s: %w", object, err)
	}
	return object, nil
}

func (p Publisher) check(name string, token uint64, owner string) error {
	if p.Store == nil {
		return invalid("Publisher.Store is nil")
	}
	if err := checkObjectName(name); err != nil {
		return err
	}
	return checkWrite(name, token, owner)
}

// Publish points name at the object of the write (token, owner), inside
// tx, when the pointer's fence accepts it (Accepts); otherwise it returns a
// *StaleError wrapping baton.ErrStaleToken, carrying the published token,
// and changes nothing: roll tx back. It does not check that the object
// was uploaded; Put it first (Write does both).
func (p Publisher) Publish(ctx context.Context, tx *sql.Tx, name string, token uint64, owner string) error {
	return p.publish(ctx, tx, name, token, owner, false)
}

func (p Publisher) publish(ctx context.Context, tx *sql.Tx, name string, token uint64, owner string, force bool) (err error) {
	defer func() { err = WithCause(ctx, err) }()
	if err := checkObjectName(name); err != nil {
		return err
	}
	if err := checkWrite(name, token, owner); err != nil {
		return err
	}
	r := p.row()
	s, err := r.prepare()
	if err != nil {
		return err
	}
	// A name published for the first time gets its row, unfenced (NULL),
	// which the fenced update then takes. The insert never changes an
	// existing row; concurrent first publishers wait on the primary key.
	ensure := s.d.ensureRow(s.table, "name, object", s.d.param(1)+", "+s.d.param(2))
	if _, err := tx.ExecContext(ctx, ensure, name, ""); err != nil {
		return fmt.Errorf("fence: pointer row for %q: %w", name, err)
	}
	key := []Column{{"name", name}}
	set := []Column{{"object", ObjectName(name, token, owner)}}
	err = r.update(ctx, tx, key, set, token, owner, force)
	var se *StaleError
	if errors.As(err, &se) {
		se.Resource = name
		return rejected(ctx, p.Observer, se)
	}
	return err
}

// Write uploads data as the temporary object of (token, owner) and then
// publishes it in its own transaction on db. A stale write returns a
// *StaleError and leaves the uploaded object behind as an orphan (the
// store cannot refuse it); the object name is returned either way once
// the upload succeeded.
func (p Publisher) Write(ctx context.Context, db *sql.DB, name string, token uint64, owner string, data io.Reader) (string, error) {
	return p.write(ctx, db, name, token, owner, data, false)
}

func (p Publisher) write(ctx context.Context, db *sql.DB, name string, token uint64, owner string, data io.Reader, force bool) (_ string, err error) {
	defer func() { err = WithCause(ctx, err) }()
	object, err := p.Put(ctx, name, token, owner, data)
	if err != nil {
		return "", err
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return object, fmt.Errorf("fence: begin: %w", err)
	}
	if err := p.publish(ctx, tx, name, token, owner, force); err != nil {
		_ = tx.Rollback() // the publish error is the one to report
		return object, err
	}
	if err := tx.Commit(); err != nil {
		return object, fmt.Errorf("fence: commit: %w", err)
	}
	return object, nil
}

// Published returns the pointer of name; a name never published returns
// an error wrapping sql.ErrNoRows.
func (p Publisher) Published(ctx context.Context, q Querier, name string) (Pointer, error) {
	s, err := p.row().prepare()
	if err != nil {
		return Pointer{}, err
	}
	var ptr Pointer
	var tok sql.NullInt64
	var own sql.NullString
	err = q.QueryRowContext(ctx, `SELECT object, `+s.tok+`, `+s.own+` FROM `+s.table+` WHERE name = `+s.d.param(1), name).
		Scan(&ptr.Object, &tok, &own)
	if err == nil && !tok.Valid {
		err = sql.ErrNoRows // a row whose first publish has not committed
	}
	if err != nil {
		return Pointer{}, fmt.Errorf("fence: pointer of %q: %w", name, err)
	}
	ptr.Token, ptr.Owner = uint64(tok.Int64), own.String
	return ptr, nil
}

// Orphans lists the objects of name (those ObjectName makes for it) that
// the pointer does not reference and that were last written before
// olderThan, sorted by name: the uploads of stale holders, of holders that
// crashed before publishing, and the objects earlier pointers referenced.
// Delete them with the store's Delete.
//
// olderThan must leave a grace period longer than any holder takes between
// Put and Publish: an object of the current holder that is not yet
// published looks exactly like an orphan, and deleting it would let the
// holder publish a pointer to nothing. Objects of other names sharing the
// prefix (name/sub/…) are not listed.
func (p Publisher) Orphans(ctx context.Context, q Querier, name string, olderThan time.Time) ([]ObjectInfo, error) {
	if p.Store == nil {
		return nil, invalid("Publisher.Store is nil")
	}
	if err := checkObjectName(name); err != nil {
		return nil, err
	}
	published := ""
	switch ptr, err := p.Published(ctx, q, name); {
	case err == nil:
		published = ptr.Object
	case !errors.Is(err, sql.ErrNoRows):
		return nil, err
	}
	objs, err := p.Store.List(ctx, name+"/")
	if err != nil {
		return nil, fmt.Errorf("fence: list %s/: %w", name, err)
	}
	var orphans []ObjectInfo
	for _, o := range objs {
		if _, ok := parseObjectName(name, o.Name); !ok || o.Name == published || !o.ModTime.Before(olderThan) {
			continue
		}
		orphans = append(orphans, o)
	}
	slices.SortFunc(orphans, func(a, b ObjectInfo) int { return strings.Compare(a.Name, b.Name) })
	return orphans, nil
}

// UnfencedPublisher is the twin of Publisher whose pointer takes every
// write, as an application that trusts its lock would. For negative
// controls only.
type UnfencedPublisher struct {
	Publisher Publisher
}

// Write uploads and publishes without the fence: a late stale write
// repoints name at its own object.
func (u UnfencedPublisher) Write(ctx context.Context, db *sql.DB, name string, token uint64, owner string, data io.Reader) (string, error) {
	return u.Publisher.write(ctx, db, name, token, owner, data, true)
}
