package idem

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/engine"
	"github.com/baton-go/baton/fence"
	"github.com/baton-go/baton/internal/sqlflavor"
)

// State is where one idempotency record is in its life.
type State string

// States. A record starts in Init, moves to Requesting just before the
// call is made, and ends in Success or Failed; Unknown is the honest state
// of a call that may or may not have taken effect.
const (
	// Init: the key is recorded and the call has certainly not been sent.
	// Whoever moves the record from Init to Requesting first makes the call.
	Init State = "INIT"
	// Requesting: the call is being made. It may have reached the other
	// side. Past Options.RequestBudget the caller is presumed dead and the
	// record is treated as Unknown.
	Requesting State = "REQUESTING"
	// Success: the call succeeded; Record.Result is its result, returned to
	// every later Do with the same key.
	Success State = "SUCCESS"
	// Failed: the call certainly did not take effect (it returned an error
	// marked with Fail, or a query or an operator said so). Final: a
	// retry needs a new key.
	Failed State = "FAILED"
	// Unknown: the call returned an error or timed out after the request
	// may have been sent. Only the query function or an operator (Resolve)
	// moves it on; it is never re-sent blindly.
	Unknown State = "UNKNOWN"
)

// Final reports whether s is Success or Failed.
func (s State) Final() bool { return s == Success || s == Failed }

func (s State) valid() bool {
	switch s {
	case Init, Requesting, Success, Failed, Unknown:
		return true
	}
	return false
}

// Errors returned by Do, Get and Resolve, wrapped; test with errors.Is.
var (
	// ErrFailed: the record is Failed. Do wraps the call's own error too
	// when the failure happened in this process.
	ErrFailed = errors.New("idem: call failed")
	// ErrUnknown: the call's outcome is unknown and the query function (if
	// any) could not settle it. Do again later, or Resolve by hand.
	ErrUnknown = errors.New("idem: outcome unknown")
	// ErrInProgress: another caller is making the call right now.
	ErrInProgress = errors.New("idem: call in progress")
	// ErrManual: the record is on the manual handling list (see Stuck); Do
	// no longer calls or queries anything for it until Resolve.
	ErrManual = errors.New("idem: needs manual handling")
	// ErrNotFound: no record for the key.
	ErrNotFound = errors.New("idem: no such key")
	// ErrConflict: the record moved on underneath this caller (an operator
	// resolved it while the call was running, or it was already final).
	ErrConflict = errors.New("idem: record changed concurrently")
)

// Fail marks err as a definite failure: the call certainly did not take
// effect (the other side refused it, a validation error before sending, a
// fence rejected a stale token). Any other error returned by a call is
// recorded as Unknown, because a timeout or a broken connection after the
// request left says nothing about whether it was carried out.
func Fail(err error) error {
	if err == nil {
		err = errors.New("failed")
	}
	return &failedError{err}
}

type failedError struct{ err error }

func (e *failedError) Error() string { return e.err.Error() }
func (e *failedError) Unwrap() []error {
	return []error{e.err, ErrFailed}
}

// Defaults for Options.
const (
	// DefaultTable is the table name when Options.Table is empty.
	DefaultTable = "idempotency_keys"
	// DefaultRequestBudget is how long a record may stay Requesting before
	// its caller is presumed dead and the record is treated as Unknown. It
	// must be longer than any call takes, or slow calls turn into unknowns
	// that are then queried while still running.
	DefaultRequestBudget = 5 * time.Minute
	// DefaultUnknownBudget is how long a record may stay Unknown before it
	// moves to the manual handling list: time enough for a few queries
	// against a supplier that answers late, short enough that a person
	// looks at it the same day.
	DefaultUnknownBudget = time.Hour
	// DefaultRecordTimeout bounds the write of an outcome after the call
	// returned. The write does not inherit the caller's cancellation: a
	// call that timed out still has its Unknown recorded.
	DefaultRecordTimeout = 10 * time.Second
)

// Options configure a Store. The zero value means the documented defaults.
type Options struct {
	// Dialect of db; zero recognises it from the driver (fence.DialectOf).
	Dialect fence.Dialect
	// Table name, or schema.table; "" means DefaultTable.
	Table string
	// RequestBudget, UnknownBudget and RecordTimeout: 0 means the Default….
	RequestBudget time.Duration
	UnknownBudget time.Duration
	RecordTimeout time.Duration
	// Owner names this process in the records it requests (for whoever
	// reads the manual handling list); "" means a random engine.NewOwnerID.
	Owner string
	// Observer, if set, is told of each key's outcomes
	// (baton.EventIdempotency; see Store.Do for the Outcome values); nil
	// reports nothing.
	Observer baton.Observer
}

// MaxKeyLen is the longest idempotency key in bytes (fence.MaxResourceLen,
// within every database's index-entry limit).
const MaxKeyLen = fence.MaxResourceLen

// Record is one idempotency key and what is known about its call. Times
// are the database's clock.
type Record struct {
	Key      string
	State    State
	Result   []byte // the call's result (Success), or what a query/operator recorded
	Err      string // the error text of a Failed or Unknown outcome, or an operator's note
	Owner    string // the Options.Owner of the process that last made the call
	Version  int64  // grows by one with every state change; transitions are conditional on it
	Attempts int64  // how many times the call was sent (more than one only after a query said Init)
	Manual   bool   // on the manual handling list
	Created  time.Time
	Changed  time.Time // when the record entered State
}

// Store is an idempotency table. It is safe for concurrent use by many
// goroutines and processes: every decision is a conditional UPDATE that
// one caller wins.
type Store struct {
	db    *sql.DB
	f     *flavor
	table string // quoted
	index string // quoted index name
	opt   Options
}

// New returns a Store on db. It sends nothing; call Migrate once (at
// deployment, or at start) to create the table.
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
	table, last, err := f.TableName("idem", opt.Table)
	if err != nil {
		return nil, err
	}
	for _, d := range []struct {
		p   *time.Duration
		def time.Duration
	}{{&opt.RequestBudget, DefaultRequestBudget}, {&opt.UnknownBudget, DefaultUnknownBudget}, {&opt.RecordTimeout, DefaultRecordTimeout}} {
		switch {
		case *d.p < 0:
			return nil, invalid("negative duration %v", *d.p)
		case *d.p == 0:
			*d.p = d.def
		}
	}
	if opt.Owner == "" {
		opt.Owner = engine.NewOwnerID()
	}
	if len(opt.Owner) > 255 || !utf8.ValidString(opt.Owner) || strings.IndexByte(opt.Owner, 0) >= 0 {
		return nil, invalid("owner %q: at most 255 bytes of UTF-8 without NUL", opt.Owner)
	}
	idx := last
	if len(idx) > 57 {
		idx = idx[:57]
	}
	return &Store{db: db, f: f, table: table, index: f.Quote(idx + "_open"), opt: opt}, nil
}

// Migrate creates the table (and its index on state) if it does not exist.
func (s *Store) Migrate(ctx context.Context) error {
	f := s.f
	cols := `
	idem_key   ` + f.KeyType + ` NOT NULL PRIMARY KEY,
	state      VARCHAR(16) NOT NULL,
	version    BIGINT NOT NULL,
	attempts   BIGINT NOT NULL,
	owner      ` + f.OwnerType + ` NOT NULL,
	result     ` + f.BlobType + `,
	err_text   TEXT NOT NULL,
	manual     SMALLINT NOT NULL,
	created_us BIGINT NOT NULL,
	changed_us BIGINT NOT NULL`
	return f.CreateTable(ctx, s.db, "idem", s.table, cols, s.index, "state, changed_us")
}

const columns = `idem_key, state, result, err_text, owner, version, attempts, manual, created_us, changed_us`

func scanRecord(row interface{ Scan(...any) error }) (Record, error) {
	var r Record
	var state string
	var manual int
	var created, changed int64
	err := row.Scan(&r.Key, &state, &r.Result, &r.Err, &r.Owner, &r.Version, &r.Attempts, &manual, &created, &changed)
	if err != nil {
		return Record{}, err
	}
	r.State, r.Manual = State(state), manual != 0
	r.Created, r.Changed = time.UnixMicro(created), time.UnixMicro(changed)
	return r, nil
}

// Get returns the record of key, or an error wrapping ErrNotFound.
func (s *Store) Get(ctx context.Context, key string) (Record, error) {
	if err := checkKey(key); err != nil {
		return Record{}, err
	}
	r, err := scanRecord(s.db.QueryRowContext(ctx, s.f.Rebind(`SELECT `+columns+` FROM `+s.table+` WHERE idem_key = ?`), key))
	if errors.Is(err, sql.ErrNoRows) {
		return Record{}, fmt.Errorf("idem: key %q: %w", key, ErrNotFound)
	}
	if err != nil {
		return Record{}, fmt.Errorf("idem: read %q: %w", key, err)
	}
	return r, nil
}

func checkKey(key string) error { return sqlflavor.CheckKey("idem", key, MaxKeyLen) }

func (s *Store) exec(ctx context.Context, q string, args ...any) (bool, error) {
	return s.f.ExecOne(ctx, s.db, q, args...)
}

func us(d time.Duration) int64 { return d.Microseconds() }

// maxSteps bounds Do's loop. Each turn of the loop follows a state change
// made by someone else, so running out means the record is being fought
// over; the caller sees ErrInProgress and comes back later.
const maxSteps = 8

// Do makes the call for key at most once, and returns what is known about
// it.
//
// The first Do for a key records it (Init) and then moves it to Requesting
// with a conditional UPDATE; only the caller whose UPDATE changed the row
// runs call, so two processes with one key never both make it. The call's
// outcome is recorded: a nil error is Success (with result), an error
// marked with Fail is Failed, and any other error — a timeout, a broken
// connection, a cancelled ctx — is Unknown, because the request may have
// been carried out.
//
// A later Do with the same key makes no call. It returns the recorded
// Success (nil error) or Failed (an error wrapping ErrFailed). For an
// Unknown record (or a Requesting one older than RequestBudget: a dead
// caller) it runs query, which must find out from the other side what
// happened to the request (a supplier's order lookup, a read of the
// resource) and return Success or Failed with the result, Unknown when it
// cannot tell, or Init when the request certainly never arrived and may be
// sent again with the same key (then Do sends it). A nil query, a query
// error or a query that answers Unknown leave the record Unknown and
// return ErrUnknown; past UnknownBudget the record moves to the manual
// handling list and Do returns ErrManual from then on, calling nothing.
//
// Other results: ErrInProgress while another caller is within its
// RequestBudget; ErrConflict when an operator resolved the record while
// this call was running (the error names both outcomes). The Record is
// returned with every error except invalid arguments and database errors.
//
// Options.Observer is told, with Event.Outcome: "hit" (a recorded Success
// or Failed returned without a call), "requesting" (this caller won the
// key and makes the call), "success", "failed" or "unknown" (the call's
// recorded outcome; "unknown" also when a Requesting record outlived its
// RequestBudget, or a query could not tell), "settled" (a query's answer
// was recorded), "manual" (Do returns ErrManual) and "conflict"; Resolve
// reports "resolved".
func (s *Store) Do(ctx context.Context, key string,
	call func(ctx context.Context) ([]byte, error),
	query func(ctx context.Context) ([]byte, State, error),
) (Record, error) {
	if err := checkKey(key); err != nil {
		return Record{}, err
	}
	if call == nil {
		return Record{}, invalid("nil call")
	}
	if _, err := s.exec(ctx, s.f.InsertIgnore(`INSERT INTO `+s.table+` (`+columns+`)
VALUES (?, 'INIT', NULL, '', ?, 0, 0, 0, `+s.f.NowUS+`, `+s.f.NowUS+`)`), key, s.opt.Owner); err != nil {
		return Record{}, fmt.Errorf("idem: record %q: %w", key, err)
	}
	var rec Record
	for range maxSteps {
		var err error
		if rec, err = s.Get(ctx, key); err != nil {
			return Record{}, err
		}
		switch rec.State {
		case Success:
			s.emit(ctx, key, "hit", nil)
			return rec, nil
		case Failed:
			err := fmt.Errorf("idem: %q failed: %s: %w", key, rec.Err, ErrFailed)
			s.emit(ctx, key, "hit", err)
			return rec, err
		case Init:
			if err := ctx.Err(); err != nil {
				return rec, err // nothing sent: the record stays Init for the next caller
			}
			won, err := s.exec(ctx, `UPDATE `+s.table+` SET state = 'REQUESTING', owner = ?, version = version + 1,
attempts = attempts + 1, manual = 0, err_text = '', changed_us = `+s.f.NowUS+`
WHERE idem_key = ? AND state = 'INIT' AND version = ?`, s.opt.Owner, key, rec.Version)
			if err != nil {
				return rec, fmt.Errorf("idem: claim %q: %w", key, err)
			}
			if won {
				s.emit(ctx, key, "requesting", nil)
				return s.run(ctx, rec, call)
			}
		case Requesting:
			if rec.Manual {
				err := fmt.Errorf("idem: %q: requesting since %v: %w", key, rec.Changed, ErrManual)
				s.emit(ctx, key, "manual", err)
				return rec, err
			}
			// Presume the caller dead only by the database's clock.
			moved, err := s.exec(ctx, `UPDATE `+s.table+` SET state = 'UNKNOWN', version = version + 1,
err_text = 'caller did not record an outcome within the request budget', changed_us = `+s.f.NowUS+`
WHERE idem_key = ? AND state = 'REQUESTING' AND version = ? AND changed_us < `+s.f.NowUS+` - ?`,
				key, rec.Version, us(s.opt.RequestBudget))
			if err != nil {
				return rec, fmt.Errorf("idem: expire %q: %w", key, err)
			}
			if moved {
				s.emit(ctx, key, "unknown", errRequestBudget)
			} else {
				if again, err := s.Get(ctx, key); err == nil && again.Version == rec.Version {
					return again, fmt.Errorf("idem: %q: %w", key, ErrInProgress)
				}
			}
		case Unknown:
			if rec.Manual {
				err := fmt.Errorf("idem: %q: unknown since %v: %w", key, rec.Changed, ErrManual)
				s.emit(ctx, key, "manual", err)
				return rec, err
			}
			next, done, err := s.settle(ctx, rec, query)
			if done {
				return next, err
			}
		default:
			return rec, fmt.Errorf("idem: %q: unrecognised state %q in the table", key, rec.State)
		}
	}
	return rec, fmt.Errorf("idem: %q changed state %d times during one Do: %w", key, maxSteps, ErrInProgress)
}

// run makes the call the caller has just claimed (rec is the Init record
// it moved to Requesting; its version is now rec.Version+1) and records the
// outcome.
func (s *Store) run(ctx context.Context, rec Record, call func(context.Context) ([]byte, error)) (Record, error) {
	version := rec.Version + 1
	result, callErr := call(ctx)
	state, text := Success, ""
	switch {
	case callErr == nil:
	case errors.Is(callErr, ErrFailed):
		state, text, result = Failed, callErr.Error(), nil
	default:
		state, text, result = Unknown, callErr.Error(), nil
	}
	// The outcome must be written even when ctx is what ended the call.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.opt.RecordTimeout)
	defer cancel()
	ok, err := s.exec(wctx, `UPDATE `+s.table+` SET state = ?, result = ?, err_text = ?, version = version + 1,
manual = 0, changed_us = `+s.f.NowUS+`
WHERE idem_key = ? AND state = 'REQUESTING' AND version = ?`, string(state), result, text, rec.Key, version)
	if err != nil {
		// The record stays Requesting and becomes Unknown after
		// RequestBudget; say what this process knows.
		return rec, fmt.Errorf("idem: %q: call ended %s (%v) but recording it failed: %w", rec.Key, state, callErr, err)
	}
	now, gerr := s.Get(wctx, rec.Key)
	if gerr != nil {
		return rec, gerr
	}
	if !ok {
		err := fmt.Errorf("idem: %q: call ended %s (%v) but the record was resolved meanwhile as %s: %w",
			rec.Key, state, callErr, now.State, ErrConflict)
		s.emit(ctx, rec.Key, "conflict", err)
		return now, err
	}
	switch state {
	case Failed:
		err := fmt.Errorf("idem: %q: %w", rec.Key, callErr) // wraps ErrFailed and the cause
		s.emit(ctx, rec.Key, "failed", err)
		return now, err
	case Unknown:
		err := fmt.Errorf("idem: %q: %w: %w", rec.Key, ErrUnknown, callErr)
		s.emit(ctx, rec.Key, "unknown", err)
		return now, err
	}
	s.emit(ctx, rec.Key, "success", nil)
	return now, nil
}

// settle runs query for an Unknown record. done is false when the record
// moved and Do should look again (including a move back to Init: resend).
func (s *Store) settle(ctx context.Context, rec Record, query func(context.Context) ([]byte, State, error)) (Record, bool, error) {
	var (
		result []byte
		state  = Unknown
		qerr   error
	)
	if query != nil {
		result, state, qerr = query(ctx)
		if qerr != nil {
			state = Unknown
		}
	}
	switch state {
	case Success, Failed, Init:
		text := ""
		if state == Failed {
			text = "query: failed"
		}
		if state != Success {
			result = nil
		}
		won, err := s.exec(ctx, `UPDATE `+s.table+` SET state = ?, result = ?, err_text = ?, version = version + 1,
manual = 0, changed_us = `+s.f.NowUS+`
WHERE idem_key = ? AND state = 'UNKNOWN' AND version = ?`, string(state), result, text, rec.Key, rec.Version)
		if err != nil {
			return rec, true, fmt.Errorf("idem: settle %q: %w", rec.Key, err)
		}
		if won {
			s.emit(ctx, rec.Key, "settled", nil)
		}
		return rec, false, nil // look again, whoever won
	case Unknown:
	default:
		return rec, true, fmt.Errorf("idem: query for %q returned state %q: %w", rec.Key, state, baton.ErrInvalidOption)
	}
	// Still unknown: past the budget it becomes a person's problem.
	if _, err := s.exec(ctx, `UPDATE `+s.table+` SET manual = 1
WHERE idem_key = ? AND state = 'UNKNOWN' AND version = ? AND manual = 0 AND changed_us < `+s.f.NowUS+` - ?`,
		rec.Key, rec.Version, us(s.opt.UnknownBudget)); err != nil {
		return rec, true, fmt.Errorf("idem: mark %q for manual handling: %w", rec.Key, err)
	}
	now, err := s.Get(ctx, rec.Key)
	if err != nil {
		return rec, true, err
	}
	why := "no query function"
	if query != nil {
		why = "query could not tell"
		if qerr != nil {
			why = "query: " + qerr.Error()
		}
	}
	if now.Manual {
		err := fmt.Errorf("idem: %q (%s): %w", rec.Key, why, ErrManual)
		s.emit(ctx, rec.Key, "manual", err)
		return now, true, err
	}
	err = fmt.Errorf("idem: %q (%s): %w", rec.Key, why, ErrUnknown)
	s.emit(ctx, rec.Key, "unknown", err)
	return now, true, err
}

// Stuck moves every record past its budget to the manual handling list and
// returns the list: records Unknown for longer than UnknownBudget, and
// records Requesting for longer than RequestBudget+UnknownBudget (a caller
// that died, and nobody came back with the key to query it). They are what
// a supplier without a query API leaves behind: a person checks with the supplier or the bill and calls Resolve. The list
// is ordered by how long the records have been stuck, oldest first.
func (s *Store) Stuck(ctx context.Context) ([]Record, error) {
	if _, err := s.db.ExecContext(ctx, s.f.Rebind(`UPDATE `+s.table+` SET manual = 1
WHERE manual = 0 AND ((state = 'UNKNOWN' AND changed_us < `+s.f.NowUS+` - ?)
 OR (state = 'REQUESTING' AND changed_us < `+s.f.NowUS+` - ?))`),
		us(s.opt.UnknownBudget), us(s.opt.RequestBudget+s.opt.UnknownBudget)); err != nil {
		return nil, fmt.Errorf("idem: mark stuck records: %w", err)
	}
	rows, err := s.db.QueryContext(ctx, `SELECT `+columns+` FROM `+s.table+`
WHERE manual = 1 AND state IN ('REQUESTING', 'UNKNOWN') ORDER BY changed_us, idem_key`)
	if err != nil {
		return nil, fmt.Errorf("idem: list stuck records: %w", err)
	}
	defer rows.Close()
	var out []Record
	for rows.Next() {
		r, err := scanRecord(rows)
		if err != nil {
			return nil, fmt.Errorf("idem: list stuck records: %w", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("idem: list stuck records: %w", err)
	}
	return out, nil
}

// Resolve records an outcome found by hand for a record that is Requesting
// or Unknown (on the manual list or not): Success with result, Failed, or
// Init when the request certainly never arrived and the next Do may send
// it again. note is kept in Record.Err as the evidence. A final record
// returns ErrConflict; a missing one ErrNotFound. A caller still running
// the call when its record is resolved gets ErrConflict when it returns.
func (s *Store) Resolve(ctx context.Context, key string, state State, result []byte, note string) (Record, error) {
	if err := checkKey(key); err != nil {
		return Record{}, err
	}
	switch state {
	case Success:
	case Failed, Init:
		result = nil
	default:
		return Record{}, invalid("Resolve(%q) to %q: only SUCCESS, FAILED or INIT", key, state)
	}
	ok, err := s.exec(ctx, `UPDATE `+s.table+` SET state = ?, result = ?, err_text = ?, version = version + 1,
manual = 0, changed_us = `+s.f.NowUS+`
WHERE idem_key = ? AND state IN ('REQUESTING', 'UNKNOWN')`, string(state), result, note, key)
	if err != nil {
		return Record{}, fmt.Errorf("idem: resolve %q: %w", key, err)
	}
	rec, err := s.Get(ctx, key)
	if err != nil {
		return Record{}, err
	}
	if !ok {
		return rec, fmt.Errorf("idem: resolve %q: record is %s: %w", key, rec.State, ErrConflict)
	}
	s.emit(ctx, key, "resolved", nil)
	return rec, nil
}

// errRequestBudget is the cause reported when a Requesting record is
// presumed Unknown because its caller did not record an outcome in time.
var errRequestBudget = errors.New("idem: caller did not record an outcome within the request budget")

// emit tells the Observer, if any, of an outcome for key
// (baton.EventIdempotency).
func (s *Store) emit(ctx context.Context, key, outcome string, err error) {
	if s.opt.Observer == nil {
		return
	}
	engine.Emit(ctx, s.opt.Observer, baton.Event{
		Kind: baton.EventIdempotency, Engine: "idem", Resource: key, Owner: s.opt.Owner, Outcome: outcome, Err: err,
	})
}

// String returns "KEY STATE vVERSION".
func (r Record) String() string {
	return r.Key + " " + string(r.State) + " v" + strconv.FormatInt(r.Version, 10)
}
