package tasks

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/fence"
	"github.com/baton-go/baton/internal/sqlflavor"
)

// State is where a task is in its life.
type State string

// States. A task is Pending until claimed, Running while an owner holds its
// lease, and ends Done or Failed. Retry puts a Running task back to
// Pending for a later attempt.
const (
	Pending State = "PENDING"
	Running State = "RUNNING"
	Done    State = "DONE"
	Failed  State = "FAILED"
)

// Errors, wrapped; test with errors.Is. Besides these, a write from an
// owner that has been superseded returns a *StaleError wrapping
// baton.ErrStaleToken, and a write on a lease that expired by the
// database's clock returns an error wrapping baton.ErrLost.
var (
	// ErrNoTask: Claim found no due Pending task it could take.
	ErrNoTask = errors.New("tasks: no task to claim")
	// ErrNotFound: no task with that key.
	ErrNotFound = errors.New("tasks: no such task")
	// ErrNotExpired: Takeover of a task whose lease has not expired by the
	// database's clock. It also wraps baton.ErrNotAcquired.
	ErrNotExpired = errors.New("tasks: lease not expired")
	// ErrChanged: Takeover with a snapshot that is no longer the task's
	// state (someone else took it over, or it finished); read it again.
	ErrChanged = errors.New("tasks: task changed since it was read")
)

// Defaults.
const (
	// DefaultTable is the table name when Options.Table is empty.
	DefaultTable = "baton_tasks"
	// DefaultLease is the lease a Claim or Takeover takes when Options.Lease
	// is zero; heartbeat at a third of it, as baton's lease keeper renews
	// at TTL/3, so two heartbeats can be lost before the lease expires.
	DefaultLease = 30 * time.Second
)

// Options configure a Store; the zero value means the defaults.
type Options struct {
	Dialect fence.Dialect // zero: recognised from the driver (fence.DialectOf)
	Table   string        // table name or schema.table; "" means DefaultTable
	Lease   time.Duration // lease taken by Claim and Takeover and renewed by Heartbeat; 0 means DefaultLease
	// Observer, if set, is told when a task changes hands or is written
	// (baton.EventTask, Outcome "claimed", "takeover", "checkpoint",
	// "completed", "failed", "retry", "stale" or "lost"); heartbeats are
	// not reported. nil reports nothing.
	Observer baton.Observer
}

// Claimant is who claims a task: an owner identity and an epoch. The epoch
// orders claimants like a fencing token: take both from the lease that
// entitles this process to run tasks (ClaimantOf), a leader's lease or a
// lock's. Every claimant of one task table must take its epochs from the
// same token source (the same election or lock name), or epochs cannot be
// compared.
type Claimant struct {
	Owner string
	Epoch uint64
}

// ClaimantOf returns the claimant of a baton lease: its Owner and Token.
func ClaimantOf(l *baton.Lease) Claimant { return Claimant{Owner: l.Owner(), Epoch: l.Token()} }

func (c Claimant) check() error {
	switch {
	case c.Owner == "":
		return invalid("empty owner")
	case len(c.Owner) > 255 || !utf8.ValidString(c.Owner) || strings.IndexByte(c.Owner, 0) >= 0:
		return invalid("owner %q: at most 255 bytes of UTF-8 without NUL", c.Owner)
	case c.Epoch > fence.MaxToken:
		return invalid("epoch %d above %d", c.Epoch, uint64(fence.MaxToken))
	}
	return nil
}

// Task is a snapshot of one task row. Times are the database's clock.
type Task struct {
	Key        string
	State      State
	Owner      string // the last claimant's owner ("" before the first claim)
	Epoch      uint64 // the last claimant's epoch
	Version    int64  // grows by one with every change; every write is conditional on it
	LeaseUntil time.Time
	Attempts   int64 // claims and takeovers so far
	NextRun    time.Time
	Payload    []byte // given to Enqueue
	Checkpoint []byte // the last checkpoint: where a new owner resumes
	Result     []byte // given to Complete
	Err        string // given to Fail
	Created    time.Time
	Updated    time.Time
}

// StaleError is returned by a write from an owner that is no longer the
// task's owner: another claimant took the task over with a higher epoch,
// or the task moved on (its version changed). It wraps baton.ErrStaleToken
// and tells what the table holds now. The write changed nothing.
type StaleError struct {
	Key           string
	Owner         string
	Epoch         uint64
	Version       int64
	StoredOwner   string
	StoredEpoch   uint64
	StoredVersion int64
	StoredState   State
}

func (e *StaleError) Error() string {
	return fmt.Sprintf("tasks: stale write to %q by %q epoch %d version %d; task is %s/%q/%d/v%d: %v",
		e.Key, e.Owner, e.Epoch, e.Version, e.StoredState, e.StoredOwner, e.StoredEpoch, e.StoredVersion, baton.ErrStaleToken)
}

// Unwrap returns baton.ErrStaleToken.
func (e *StaleError) Unwrap() error { return baton.ErrStaleToken }

// Store is a durable task table. Every transition is one conditional
// UPDATE whose affected-row count decides it, so any number of processes
// may share the table.
type Store struct {
	db    *sql.DB
	f     *flavor
	table string
	index string
	lease time.Duration
	obs   baton.Observer
}

// New returns a Store on db. It sends nothing; call Migrate to create the
// table.
func New(db *sql.DB, opt Options) (*Store, error) {
	if db == nil {
		return nil, invalid("nil *sql.DB")
	}
	f, err := flavorOf(db, opt.Dialect)
	if err != nil {
		return nil, err
	}
	if opt.Table == "" {
		opt.Table = DefaultTable
	}
	table, last, err := f.TableName("tasks", opt.Table)
	if err != nil {
		return nil, err
	}
	switch {
	case opt.Lease < 0:
		return nil, invalid("negative lease %v", opt.Lease)
	case opt.Lease == 0:
		opt.Lease = DefaultLease
	case opt.Lease < time.Millisecond:
		return nil, invalid("lease %v below 1ms", opt.Lease)
	}
	if len(last) > 57 {
		last = last[:57]
	}
	return &Store{db: db, f: f, table: table, index: f.Quote(last + "_due"), lease: opt.Lease, obs: opt.Observer}, nil
}

// Migrate creates the task table and its index if they do not exist.
func (s *Store) Migrate(ctx context.Context) error {
	f := s.f
	cols := `
	task_key    ` + f.KeyType + ` NOT NULL PRIMARY KEY,
	state       VARCHAR(16) NOT NULL,
	owner       ` + f.OwnerType + ` NOT NULL,
	epoch       BIGINT NOT NULL,
	version     BIGINT NOT NULL,
	lease_until BIGINT NOT NULL,
	attempts    BIGINT NOT NULL,
	next_run    BIGINT NOT NULL,
	payload     ` + f.BlobType + `,
	checkpoint  ` + f.BlobType + `,
	result      ` + f.BlobType + `,
	err_text    TEXT NOT NULL,
	created_us  BIGINT NOT NULL,
	updated_us  BIGINT NOT NULL`
	return f.CreateTable(ctx, s.db, "tasks", s.table, cols, s.index, "state, next_run")
}

const columns = `task_key, state, owner, epoch, version, lease_until, attempts, next_run, payload, checkpoint, result, err_text, created_us, updated_us`

func scanTask(row interface{ Scan(...any) error }) (Task, error) {
	var t Task
	var state string
	var epoch, lease, next, created, updated int64
	if err := row.Scan(&t.Key, &state, &t.Owner, &epoch, &t.Version, &lease, &t.Attempts, &next,
		&t.Payload, &t.Checkpoint, &t.Result, &t.Err, &created, &updated); err != nil {
		return Task{}, err
	}
	t.State, t.Epoch = State(state), uint64(epoch)
	t.LeaseUntil, t.NextRun = time.UnixMicro(lease), time.UnixMicro(next)
	t.Created, t.Updated = time.UnixMicro(created), time.UnixMicro(updated)
	return t, nil
}

func checkKey(key string) error { return sqlflavor.CheckKey("tasks", key, fence.MaxResourceLen) }

func (s *Store) exec(ctx context.Context, q string, args ...any) (bool, error) {
	return s.f.ExecOne(ctx, s.db, q, args...)
}

// Get returns the task key, or an error wrapping ErrNotFound.
func (s *Store) Get(ctx context.Context, key string) (Task, error) {
	if err := checkKey(key); err != nil {
		return Task{}, err
	}
	t, err := scanTask(s.db.QueryRowContext(ctx, s.f.Rebind(`SELECT `+columns+` FROM `+s.table+` WHERE task_key = ?`), key))
	if errors.Is(err, sql.ErrNoRows) {
		return Task{}, fmt.Errorf("tasks: %q: %w", key, ErrNotFound)
	}
	if err != nil {
		return Task{}, fmt.Errorf("tasks: read %q: %w", key, err)
	}
	return t, nil
}

// Enqueue adds a Pending task under key, due after delay (by the
// database's clock), and reports whether it was created. The key is the
// task's identity: enqueueing an existing key changes nothing and returns
// the task as it is, so a producer may retry Enqueue freely.
func (s *Store) Enqueue(ctx context.Context, key string, payload []byte, delay time.Duration) (Task, bool, error) {
	if err := checkKey(key); err != nil {
		return Task{}, false, err
	}
	if delay < 0 {
		return Task{}, false, invalid("negative delay %v", delay)
	}
	created, err := s.exec(ctx, s.f.InsertIgnore(`INSERT INTO `+s.table+` (`+columns+`)
VALUES (?, 'PENDING', '', 0, 1, 0, 0, `+s.f.NowUS+` + ?, ?, NULL, NULL, '', `+s.f.NowUS+`, `+s.f.NowUS+`)`),
		key, delay.Microseconds(), payload)
	if err != nil {
		return Task{}, false, fmt.Errorf("tasks: enqueue %q: %w", key, err)
	}
	t, err := s.Get(ctx, key)
	return t, created, err
}

// claimBatch is how many due tasks Claim tries before giving up: enough to
// get past the ones other claimants win at the same moment.
const claimBatch = 16

// Claim takes a due Pending task for c, oldest due first, with a lease of
// Options.Lease. The claim is a conditional UPDATE on the version read a
// moment before, so of many concurrent claimants exactly one gets each
// task. A task whose stored epoch is higher than c's (or equal with another
// owner) is skipped: it was last handled under a newer grant, and the
// fence rule applies to claims as to every other write. Without a task to
// claim, ErrNoTask.
func (s *Store) Claim(ctx context.Context, c Claimant) (*Claim, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	rows, err := s.db.QueryContext(ctx, s.f.Rebind(`SELECT task_key, version FROM `+s.table+`
WHERE state = 'PENDING' AND next_run <= `+s.f.NowUS+` AND (epoch < ? OR (epoch = ? AND owner = ?))
ORDER BY next_run, task_key LIMIT `+fmt.Sprint(claimBatch)), int64(c.Epoch), int64(c.Epoch), c.Owner)
	if err != nil {
		return nil, fmt.Errorf("tasks: claim: %w", err)
	}
	type cand struct {
		key     string
		version int64
	}
	var cands []cand
	for rows.Next() {
		var k cand
		if err := rows.Scan(&k.key, &k.version); err != nil {
			rows.Close()
			return nil, fmt.Errorf("tasks: claim: %w", err)
		}
		cands = append(cands, k)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("tasks: claim: %w", err)
	}
	for _, k := range cands {
		won, err := s.exec(ctx, `UPDATE `+s.table+` SET state = 'RUNNING', owner = ?, epoch = ?, version = version + 1,
lease_until = `+s.f.NowUS+` + ?, attempts = attempts + 1, updated_us = `+s.f.NowUS+`
WHERE task_key = ? AND state = 'PENDING' AND version = ? AND next_run <= `+s.f.NowUS+`
AND (epoch < ? OR (epoch = ? AND owner = ?))`,
			c.Owner, int64(c.Epoch), s.lease.Microseconds(), k.key, k.version, int64(c.Epoch), int64(c.Epoch), c.Owner)
		if err != nil {
			return nil, fmt.Errorf("tasks: claim %q: %w", k.key, err)
		}
		if won {
			cl, err := s.claimed(ctx, k.key, c, k.version+1)
			if err == nil && s.obs != nil {
				s.emit(ctx, "claimed", k.key, c, nil)
			}
			return cl, err
		}
	}
	return nil, ErrNoTask
}

func (s *Store) claimed(ctx context.Context, key string, c Claimant, version int64) (*Claim, error) {
	t, err := s.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	if t.Version != version || t.Owner != c.Owner || t.Epoch != c.Epoch {
		// Taken over between our UPDATE and this read: only possible if
		// our lease expired already (a lease shorter than a round trip).
		return nil, s.stale(ctx, key, c, version, t)
	}
	return &Claim{s: s, c: c, key: key, version: version, task: t}, nil
}

// Expired lists up to limit Running tasks whose lease has expired by the
// database's clock: candidates for Takeover, oldest expiry first.
func (s *Store) Expired(ctx context.Context, limit int) ([]Task, error) {
	if limit <= 0 {
		return nil, invalid("limit %d", limit)
	}
	rows, err := s.db.QueryContext(ctx, s.f.Rebind(`SELECT `+columns+` FROM `+s.table+`
WHERE state = 'RUNNING' AND lease_until < `+s.f.NowUS+` ORDER BY lease_until, task_key LIMIT `+fmt.Sprint(limit)))
	if err != nil {
		return nil, fmt.Errorf("tasks: list expired: %w", err)
	}
	defer rows.Close()
	var out []Task
	for rows.Next() {
		t, err := scanTask(rows)
		if err != nil {
			return nil, fmt.Errorf("tasks: list expired: %w", err)
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("tasks: list expired: %w", err)
	}
	return out, nil
}

// Takeover takes a Running task whose owner's lease has expired, for c. It
// is one conditional UPDATE:
//
//	UPDATE … SET owner = c, epoch = c.Epoch, version = version + 1, lease_until = now + lease
//	WHERE key = ? AND version = seen.Version AND epoch = seen.Epoch AND lease_until < now AND epoch < c.Epoch
//
// with now the database's clock: it succeeds only if nothing changed since
// seen was read (Get or Expired), the lease really expired, and c's epoch
// is greater than the old owner's — a claimant with an older grant cannot
// take a task from a newer one. The old owner's later writes then affect
// no row and return a *StaleError. The returned Claim carries the last
// checkpoint (Claim.Task().Checkpoint) to resume from.
//
// Errors: ErrNotExpired (also baton.ErrNotAcquired) while the lease runs;
// ErrChanged when seen is out of date; a *StaleError (baton.ErrStaleToken)
// when c's epoch is not greater; ErrNotFound.
func (s *Store) Takeover(ctx context.Context, seen Task, c Claimant) (*Claim, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	if err := checkKey(seen.Key); err != nil {
		return nil, err
	}
	won, err := s.exec(ctx, `UPDATE `+s.table+` SET owner = ?, epoch = ?, version = version + 1,
lease_until = `+s.f.NowUS+` + ?, attempts = attempts + 1, updated_us = `+s.f.NowUS+`
WHERE task_key = ? AND state = 'RUNNING' AND version = ? AND epoch = ? AND lease_until < `+s.f.NowUS+` AND epoch < ?`,
		c.Owner, int64(c.Epoch), s.lease.Microseconds(), seen.Key, seen.Version, int64(seen.Epoch), int64(c.Epoch))
	if err != nil {
		return nil, fmt.Errorf("tasks: take over %q: %w", seen.Key, err)
	}
	if won {
		cl, err := s.claimed(ctx, seen.Key, c, seen.Version+1)
		if err == nil && s.obs != nil {
			s.tookOver(ctx, seen, cl)
		}
		return cl, err
	}
	now, err := s.Get(ctx, seen.Key)
	if err != nil {
		return nil, err
	}
	switch {
	case now.Version != seen.Version || now.Epoch != seen.Epoch || now.State != Running:
		return nil, fmt.Errorf("tasks: take over %q: read at v%d, now %s/%q/%d/v%d: %w",
			seen.Key, seen.Version, now.State, now.Owner, now.Epoch, now.Version, ErrChanged)
	case c.Epoch <= now.Epoch:
		return nil, s.stale(ctx, seen.Key, c, seen.Version, now)
	default:
		return nil, fmt.Errorf("tasks: take over %q: %q holds it until %v: %w (%w)",
			seen.Key, now.Owner, now.LeaseUntil, ErrNotExpired, baton.ErrNotAcquired)
	}
}

// stale returns the StaleError of c's write at version, the task being
// now, and reports it to the Observer.
func (s *Store) stale(ctx context.Context, key string, c Claimant, version int64, now Task) error {
	if s.obs != nil {
		s.emitStale(ctx, key, c, now)
	}
	return &StaleError{Key: key, Owner: c.Owner, Epoch: c.Epoch, Version: version,
		StoredOwner: now.Owner, StoredEpoch: now.Epoch, StoredVersion: now.Version, StoredState: now.State}
}
