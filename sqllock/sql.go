package sqllock

import (
	"strconv"
	"strings"

	"github.com/baton-go/baton/fence"
)

// statements holds one dialect's SQL for the configured table names. Every
// statement that judges expiry uses the database clock (now).
type statements struct {
	d     fence.Dialect
	locks string // table of rows
	// locksArg is locks boxed once, for the statements that take it as an
	// argument (PostgreSQL's release NOTIFYs on the table's channel).
	locksArg any
	tokens   string // one-row counter (MySQL, SQLite)
	noSeq    bool   // MySQL dialect: the counter even on MariaDB (tests)
	seq      string // sequence (PostgreSQL)
	now      string // the database clock as an SQL expression of expires_at's type
	plus     string // expression adding the TTL parameter (µs) to now; contains %s for the param

	schema []string

	// hot holds the statements every acquire and release sends, built once
	// in newStatements: building them per call was about a tenth of a
	// PostgreSQL lock+unlock's allocations.
	hot struct {
		pgAcquire, pgAcquireWait  string // PostgreSQL
		myTake, myTakeSeq, myNext string // MySQL
		myTakeRow                 string // MariaDB, with the sequence
		liteTake, liteBump        string // SQLite
		txBump                    string // MySQL, SQLite
		release1                  string // release(1)
	}
}

func newStatements(d fence.Dialect, prefix string) *statements {
	s := &statements{d: d, locks: prefix + "locks", tokens: prefix + "tokens", seq: prefix + "token_seq"}
	s.locksArg = s.locks
	switch d {
	case fence.Postgres:
		s.now = "clock_timestamp()"
		s.schema = []string{
			`CREATE TABLE IF NOT EXISTS ` + s.locks + ` (
	name       text        NOT NULL,
	slot       integer     NOT NULL DEFAULT 0,
	kind       text        NOT NULL DEFAULT 'mutex',
	owner      text        NOT NULL DEFAULT '',
	token      bigint      NOT NULL DEFAULT 0,
	expires_at timestamptz NOT NULL,
	renewal    bigint      NOT NULL DEFAULT 0,
	data       text        NOT NULL DEFAULT '',
	holder     varchar(256),
	waiting    boolean     NOT NULL DEFAULT false,
	PRIMARY KEY (name, slot))`,
			`ALTER TABLE ` + s.locks + ` ADD COLUMN IF NOT EXISTS data text NOT NULL DEFAULT '',
	ADD COLUMN IF NOT EXISTS holder varchar(256),
	ADD COLUMN IF NOT EXISTS waiting boolean NOT NULL DEFAULT false`,
			`CREATE SEQUENCE IF NOT EXISTS ` + s.seq,
		}
	case fence.MySQL:
		s.now = "UTC_TIMESTAMP(6)"
		s.schema = []string{
			`CREATE TABLE IF NOT EXISTS ` + s.locks + ` (
	name       VARBINARY(1024) NOT NULL,
	slot       INT             NOT NULL DEFAULT 0,
	kind       VARCHAR(16)     NOT NULL DEFAULT 'mutex',
	owner      VARCHAR(64)     NOT NULL DEFAULT '',
	token      BIGINT UNSIGNED NOT NULL DEFAULT 0,
	expires_at DATETIME(6)     NOT NULL,
	renewal    BIGINT          NOT NULL DEFAULT 0,
	data       VARCHAR(1024)   NOT NULL DEFAULT '',
	holder     VARCHAR(256)    NULL,
	PRIMARY KEY (name, slot)) ENGINE=InnoDB`,
			`CREATE TABLE IF NOT EXISTS ` + s.tokens + ` (
	id TINYINT NOT NULL PRIMARY KEY, v BIGINT UNSIGNED NOT NULL) ENGINE=InnoDB`,
			`INSERT IGNORE INTO ` + s.tokens + ` (id, v) VALUES (1, 0)`,
		}
	case fence.SQLite:
		// julianday('now') works on every SQLite 3; 'now' is fixed for the
		// duration of one statement.
		s.now = "CAST((julianday('now') - 2440587.5) * 86400000000.0 AS INTEGER)"
		s.schema = []string{
			`CREATE TABLE IF NOT EXISTS ` + s.locks + ` (
	name       TEXT    NOT NULL,
	slot       INTEGER NOT NULL DEFAULT 0,
	kind       TEXT    NOT NULL DEFAULT 'mutex',
	owner      TEXT    NOT NULL DEFAULT '',
	token      INTEGER NOT NULL DEFAULT 0,
	expires_at INTEGER NOT NULL,
	renewal    INTEGER NOT NULL DEFAULT 0,
	data       TEXT    NOT NULL DEFAULT '',
	holder     TEXT,
	PRIMARY KEY (name, slot)) WITHOUT ROWID`,
			`CREATE TABLE IF NOT EXISTS ` + s.tokens + ` (
	id INTEGER PRIMARY KEY CHECK (id = 1), v INTEGER NOT NULL)`,
			`INSERT OR IGNORE INTO ` + s.tokens + ` (id, v) VALUES (1, 0)`,
		}
	}
	switch d {
	case fence.Postgres:
		s.hot.pgAcquire, s.hot.pgAcquireWait = s.pgAcquire(7), s.pgAcquireWait()
	case fence.MySQL:
		s.hot.myTake, s.hot.myTakeSeq, s.hot.txBump = s.myTake("?"), s.myTake("NEXTVAL("+s.seq+")"), s.txBump()
		s.hot.myNext = `SELECT NEXTVAL(` + s.seq + `)`
		s.hot.myTakeRow = s.myTakeRow()
	case fence.SQLite:
		s.hot.liteTake, s.hot.liteBump, s.hot.txBump = s.liteTake(), s.liteBump(), s.txBump()
	}
	s.hot.release1 = s.release(1)
	return s
}

// p returns the n-th (1-based) placeholder.
func (s *statements) p(n int) string {
	if s.d == fence.Postgres {
		return "$" + strconv.Itoa(n)
	}
	return "?"
}

// later is now plus the TTL in microseconds given as placeholder n.
func (s *statements) later(n int) string {
	switch s.d {
	case fence.Postgres:
		return "clock_timestamp() + " + s.p(n) + "::bigint * interval '1 microsecond'"
	case fence.MySQL:
		return "UTC_TIMESTAMP(6) + INTERVAL " + s.p(n) + " MICROSECOND"
	default:
		return s.now + " + " + s.p(n)
	}
}

// pgAcquire takes slot of name for owner if the row is free or missing, in
// one upsert, returning the token; 0 or no row when the row is held. On
// an existing row the token is nextval evaluated in DO UPDATE, that is
// under the row's lock and after the previous grant's token was
// committed. The nextval of VALUES is spent on every attempt but serves
// only an insert: a sequence value is cheaper than a second plan. It
// replaced a WITH statement of an UPDATE and an INSERT guarded by NOT
// EXISTS, which cost about 10 µs more server time per lock+unlock (37–39
// against 27–29 µs for take and free, a server-side loop of 20,000, four
// runs) and 2–5 µs more per refused attempt, although a refused upsert
// locks the held row for its instant.
//
// A refused attempt marks the held row "waiting" (once per grant: an
// attempt that finds the mark set changes nothing), which tells the
// holder's release to NOTIFY (see release): a release nobody waits for
// sends none. A grant clears the mark, unless $waiting says that other
// waiters of the name wait in this process: they made their attempts
// before this grant, and only the oldest of them is woken per release.
// Free is judged once per statement, on statement_timestamp(): every
// column's CASE must agree, and clock_timestamp() moves between them.
// Parameters: name, slot, kind, owner, ttl µs, holder record; waiting
// others at $waiting.
func (s *statements) pgAcquire(waiting int) string {
	free := `l.expires_at <= statement_timestamp()`
	pick := func(col, v string) string {
		return col + ` = CASE WHEN ` + free + ` THEN ` + v + ` ELSE l.` + col + ` END`
	}
	return `INSERT INTO ` + s.locks + ` AS l (name, slot, kind, owner, token, expires_at, holder)
VALUES ($1, $2, $3, $4, nextval('` + s.seq + `'), ` + s.later(5) + `, $6)
ON CONFLICT (name, slot) DO UPDATE SET ` + pick("kind", "excluded.kind") + `, ` + pick("owner", "excluded.owner") + `,
	` + pick("token", "nextval('"+s.seq+"')") + `, ` + pick("expires_at", "excluded.expires_at") + `,
	` + pick("holder", "excluded.holder") + `, waiting = NOT (` + free + `) OR $` + strconv.Itoa(waiting) + `::boolean
WHERE ` + free + ` OR NOT l.waiting
RETURNING CASE WHEN owner = $4 THEN token ELSE 0 END AS token`
}

// liteTake is the first statement of the SQLite acquire transaction: take
// the row (insert it, or overwrite it if it is free) with the counter's
// next value as its token, returning the token; no row when the row is
// held. The counter is advanced (liteBump) in the same transaction, whose
// write lock is the database's: nobody takes a token in between.
// Parameters: name, slot, kind, owner, ttl µs, holder record.
func (s *statements) liteTake() string {
	return `INSERT INTO ` + s.locks + ` (name, slot, kind, owner, token, expires_at, holder)
VALUES (?, ?, ?, ?, (SELECT v + 1 FROM ` + s.tokens + ` WHERE id = 1), ` + s.later(5) + `, ?)
ON CONFLICT (name, slot) DO UPDATE SET kind = excluded.kind, owner = excluded.owner, token = excluded.token,
	expires_at = excluded.expires_at, holder = excluded.holder
WHERE ` + s.locks + `.expires_at <= ` + s.now + `
RETURNING token`
}

// liteBump advances SQLite's counter to the token liteTake stored.
func (s *statements) liteBump() string { return `UPDATE ` + s.tokens + ` SET v = v + 1 WHERE id = 1` }

// myTake is MySQL's acquire, one autocommitted statement after the token
// was taken from the counter (txBump): insert the row, or overwrite it if
// it is free and its token is below the new one. The token check is what
// keeps tokens increasing per name without a transaction around the two
// statements: a token taken before another client's grant and release of
// the name is refused, never stored over a larger one. The result's
// LastInsertId is the token when the row was taken and 0 when it was not,
// whatever clientFoundRows says about rows affected: the VALUES row sets
// LAST_INSERT_ID to the token, and the refusing branch resets it to 0.
// Assignments run left to right: token and expires_at see the new owner.
// The token is tok: "?" for the counter's value, taken before, or the
// sequence's NEXTVAL (MariaDB; see sequence.go), taken in the statement.
// Parameters: name, slot, kind, owner, the token if tok is "?", ttl µs,
// holder record.
func (s *statements) myTake(tok string) string {
	free := `expires_at <= UTC_TIMESTAMP(6) AND token < VALUES(token)`
	return `INSERT INTO ` + s.locks + ` (name, slot, kind, owner, token, expires_at, holder)
VALUES (?, ?, ?, ?, LAST_INSERT_ID(` + tok + `), ` + s.later(6) + `, ?)
ON DUPLICATE KEY UPDATE
	kind = IF(` + free + `, VALUES(kind), kind),
	owner = IF(` + free + `, VALUES(owner), owner),
	token = IF(owner = VALUES(owner), VALUES(token), token + LAST_INSERT_ID(0)),
	expires_at = IF(owner = VALUES(owner), VALUES(expires_at), expires_at),
	holder = IF(owner = VALUES(owner), VALUES(holder), holder)`
}

// myTakeRow is MariaDB's first statement of a mutex attempt with the
// sequence: one UPDATE of the name's row, which every name has from its
// first grant on (a release keeps it). It takes the row if it is free and
// its token is below the sequence's next value, as myTake does, with that
// value as the token; the value is drawn only for a free row. The
// result's LastInsertId tells the outcome, whatever clientFoundRows says
// about rows affected: the token when the row was taken, heldID when it
// was not (the refusing branch sets LAST_INSERT_ID to it and leaves the
// token as it is), and 0 when there is no row, which only the upsert
// (myTake) can add. The upsert tries an insert first: per uncontended
// lock+unlock it cost 194–203 µs against 145–177 for an UPDATE and the
// release (5,000 pairs × 3, MariaDB 10.11, one pool). Assignments run left
// to right: the token is set first, and the other columns follow it
// (token = LAST_INSERT_ID() only where it was taken). Parameters: kind,
// owner, holder record, ttl µs, name.
func (s *statements) myTakeRow() string {
	took := `token = LAST_INSERT_ID()`
	return `UPDATE ` + s.locks + ` SET
	token = IF(expires_at <= UTC_TIMESTAMP(6) AND token < LAST_INSERT_ID(NEXTVAL(` + s.seq + `)), LAST_INSERT_ID(),
		token + 0 * LAST_INSERT_ID(` + heldIDText + `)),
	kind = IF(` + took + `, ?, kind), owner = IF(` + took + `, ?, owner), holder = IF(` + took + `, ?, holder),
	expires_at = IF(` + took + `, ` + s.later(4) + `, expires_at)
WHERE name = ? AND slot = 0`
}

// heldID is the LastInsertId of myTakeRow on a held row: LAST_INSERT_ID
// of the largest BIGINT UNSIGNED, which the driver reads as -1 and no
// token can be.
const (
	heldID     = -1
	heldIDText = "18446744073709551615"
)

// txBump advances the shared counter by one; MySQL returns the new value
// as the result's LastInsertId, SQLite as a row.
func (s *statements) txBump() string {
	if s.d == fence.MySQL {
		return `UPDATE ` + s.tokens + ` SET v = LAST_INSERT_ID(v + 1) WHERE id = 1`
	}
	return `UPDATE ` + s.tokens + ` SET v = v + 1 WHERE id = 1 RETURNING v`
}

// refList is "(name, slot, owner) IN (…)" for n refs, with placeholders
// numbered from first, and the arguments appended by the caller in that
// order. One ref is written as three equalities instead: MariaDB plans a
// one-element row IN list as a scan of the whole primary key, locking
// every row it reads (a lone release then waited for, and blocked, every
// acquire and renewal of the table), and SQLite searches by name only.
func (s *statements) refList(n, first int) string {
	if n == 1 {
		return "name = " + s.p(first) + " AND slot = " + s.p(first+1) + " AND owner = " + s.p(first+2)
	}
	var b strings.Builder
	b.WriteString("(name, slot, owner) IN (")
	if s.d == fence.SQLite {
		b.WriteString("VALUES ")
	}
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		k := first + 3*i
		b.WriteString("(" + s.p(k) + ", " + s.p(k+1) + ", " + s.p(k+2) + ")")
	}
	b.WriteString(")")
	return b.String()
}

// renew extends n rows still owned and unexpired. PostgreSQL and SQLite
// return the renewed rows; MySQL marks them with the renewal parameter
// (read back only when fewer rows than asked changed). Parameters: ttl µs,
// renewal mark, then the refs (PostgreSQL: as three arrays).
func (s *statements) renew(n int) string {
	switch s.d {
	case fence.Postgres:
		// Arrays joined by unnest: one index probe per ref. A row-value IN
		// list of hundreds of refs is planned as a scan evaluating every
		// alternative on every row.
		return `UPDATE ` + s.locks + ` AS l SET expires_at = ` + s.later(1) + `, renewal = $2
FROM unnest($3::text[], $4::bigint[], $5::text[]) AS r(name, slot, owner)
WHERE l.name = r.name AND l.slot = r.slot AND l.owner = r.owner AND l.expires_at > clock_timestamp()
RETURNING l.name, l.slot, l.owner`
	case fence.MySQL:
		// MariaDB plans a row IN list of two refs or more as a range of
		// primary-key lookups, one per ref (a lone ref is written as
		// equalities, see refList). A derived table of UNION ALL SELECTs
		// joined on the key read the same rows but cost several times the
		// server time to parse and plan: ~100 ms for 500 refs, against
		// 4–14 ms for the IN list (MariaDB 10.11, loaded host).
		return `UPDATE ` + s.locks + ` SET expires_at = ` + s.later(1) + `, renewal = ?
WHERE ` + s.refList(n, 3) + ` AND expires_at > UTC_TIMESTAMP(6)`
	}
	return `UPDATE ` + s.locks + ` SET expires_at = ` + s.later(1) + `, renewal = ` + s.p(2) + `
WHERE ` + s.refList(n, 3) + ` AND expires_at > ` + s.now + ` RETURNING name, slot, owner`
}

// pgRelease frees the refs given as three arrays and notifies the channel
// ($4) with each freed name that may have waiters (see pgNotify).
func (s *statements) pgRelease() string {
	return `UPDATE ` + s.locks + ` AS l SET owner = '', expires_at = clock_timestamp(), holder = NULL
	FROM unnest($1::text[], $2::bigint[], $3::text[]) AS x(name, slot, owner)
	WHERE l.name = x.name AND l.slot = x.slot AND l.owner = x.owner
	RETURNING ` + pgNotify("$4")
}

// pgNotify is the RETURNING list of a PostgreSQL release: NOTIFY of the
// channel ch with the freed row's name where it may have waiters
// (pgNotified), one empty column per freed row. The CASE calls pg_notify
// only for those rows. It replaced a WITH of the UPDATE and a SELECT of
// pg_notify over its rows, whose CTE scan cost about 6 µs more server
// time per release (pgbench, prepared, one ref: 186 against 180 µs per
// lock+unlock, four runs of 6 s).
func pgNotify(ch string) string {
	return `CASE WHEN ` + pgNotified + ` THEN pg_notify(` + ch + `, l.name)::text END`
}

// pgNotified is which freed rows a PostgreSQL release NOTIFYs: a mutex's
// only when an attempt was refused since its grant (the row's waiting
// mark, see pgAcquire), since a mutex's only listeners are its waiters;
// the multi-row recipes' always (their waiters and Election.Observe
// watch the name without attempts of their own on the row).
const pgNotified = `(waiting OR kind <> '` + kindMutex + `')`

// renewedMarked lists which of n refs carry the renewal mark (MySQL).
// Parameters: mark, then the refs.
func (s *statements) renewedMarked(n int) string {
	return `SELECT name, slot, owner FROM ` + s.locks + ` WHERE renewal = ? AND ` + s.refList(n, 2)
}

// release frees n rows still owned by the given owners: owner and holder
// record cleared, expires_at set to now (so it records when the row
// became free), token kept. On PostgreSQL it also notifies the table's
// channel with each freed name that may have waiters (pgNotified). Parameters: the refs (then the channel on
// PostgreSQL).
func (s *statements) release(n int) string {
	if s.d == fence.Postgres {
		return `UPDATE ` + s.locks + ` AS l SET owner = '', expires_at = ` + s.now + `, holder = NULL WHERE ` + s.refList(n, 1) +
			` RETURNING ` + pgNotify(s.p(3*n+1))
	}
	return `UPDATE ` + s.locks + ` SET owner = '', expires_at = ` + s.now + `, holder = NULL WHERE ` + s.refList(n, 1)
}

// entries lists a name's owned rows but the waiters' intent rows that
// expired (their waiter is gone). Parameter: name.
func (s *statements) entries() string {
	return `SELECT slot, kind, owner FROM ` + s.locks + ` WHERE name = ` + s.p(1) + ` AND owner <> ''
	AND (kind NOT IN ('mwait', 'rwait', 'wwait', 'swait', 'cwait') OR expires_at > ` + s.now + `) ORDER BY slot`
}

// prune deletes rows whose expiry is older than now minus the parameter
// (µs).
func (s *statements) prune() string {
	switch s.d {
	case fence.Postgres:
		return `DELETE FROM ` + s.locks + ` WHERE expires_at < clock_timestamp() - $1::bigint * interval '1 microsecond'`
	case fence.MySQL:
		return `DELETE FROM ` + s.locks + ` WHERE expires_at < UTC_TIMESTAMP(6) - INTERVAL ? MICROSECOND`
	default:
		return `DELETE FROM ` + s.locks + ` WHERE expires_at < ` + s.now + ` - ?`
	}
}

// The statements below serve the multi-row recipes (RWMutex, Semaphore,
// Election); see recipe.go. They all run inside one transaction that
// holds the name's guard row.

// guard creates the guard row of a name (slot -1) if it is missing and
// locks it until the transaction ends: a locking upsert, so that two
// transactions on a new name cannot both miss the row. Its expires_at
// records the last attempt, so that Prune leaves busy guards alone.
// Parameter: name; on PostgreSQL also the transaction's
// idle_in_transaction_session_timeout and lock_timeout (ms, as text), set
// by the row the upsert inserts, so before it waits for the guard's lock
// (see readGuarded).
func (s *statements) guard() string {
	ins := `INSERT INTO ` + s.locks + ` (name, slot, kind, owner, token, expires_at) `
	row := s.p(1) + `, -1, 'guard', '', 0, ` + s.now
	upsert := ` ON CONFLICT (name, slot) DO UPDATE SET expires_at = excluded.expires_at`
	switch s.d {
	case fence.MySQL:
		return ins + `VALUES (` + row + `) ON DUPLICATE KEY UPDATE expires_at = UTC_TIMESTAMP(6)`
	case fence.Postgres:
		return `WITH t AS (SELECT set_config('idle_in_transaction_session_timeout', $2, true), set_config('lock_timeout', $3, true)) ` +
			ins + `SELECT ` + row + ` FROM t` + upsert
	}
	return ins + `VALUES (` + row + `)` + upsert
}

// recipeRows reads the rows of a name from the mutex's slot 0 up, but not
// the mutex waiters' intent range, with whether each is live on the
// database clock (1) or not (0).
// Parameter: name.
func (s *statements) recipeRows() string {
	return `SELECT slot, kind, owner, token, data, CASE WHEN expires_at > ` + s.now + ` THEN 1 ELSE 0 END
FROM ` + s.locks + ` WHERE name = ` + s.p(1) + ` AND slot >= 0 AND slot < ` + strconv.Itoa(intentSlotBase) + ` ORDER BY slot`
}

// nextToken takes a token from the sequence (PostgreSQL).
func (s *statements) nextToken() string { return `SELECT nextval('` + s.seq + `')` }

// putRow overwrites the row at a slot the transaction found free or owns.
// Parameters: kind, owner, token, data, ttl µs, holder record, name, slot.
func (s *statements) putRow() string {
	return `UPDATE ` + s.locks + ` SET kind = ` + s.p(1) + `, owner = ` + s.p(2) + `, token = ` + s.p(3) + `, data = ` + s.p(4) +
		`, expires_at = ` + s.later(5) + `, holder = ` + s.p(6) + ` WHERE name = ` + s.p(7) + ` AND slot = ` + s.p(8)
}

// newRow inserts a row at a slot the name does not have yet.
// Parameters: name, slot, kind, owner, token, data, ttl µs, holder record.
func (s *statements) newRow() string {
	return `INSERT INTO ` + s.locks + ` (name, slot, kind, owner, token, data, expires_at, holder) VALUES (` +
		s.p(1) + `, ` + s.p(2) + `, ` + s.p(3) + `, ` + s.p(4) + `, ` + s.p(5) + `, ` + s.p(6) + `, ` + s.later(7) + `, ` + s.p(8) + `)`
}

// reap frees a row whose lease expired, owner-checked, so that a dead
// holder's row neither blocks nor stays listed. Parameters: name, slot,
// owner.
func (s *statements) reap() string {
	return `UPDATE ` + s.locks + ` SET owner = '', holder = NULL WHERE name = ` + s.p(1) + ` AND slot = ` + s.p(2) + ` AND owner = ` + s.p(3)
}

// probe reads nothing from the table but fails if it or one of the
// columns this version needs is missing (Options.NoMigrate).
func (s *statements) probe() string {
	cols := `name, slot, kind, owner, token, expires_at, renewal, data, holder`
	if s.d == fence.Postgres {
		cols += `, waiting`
	}
	return `SELECT ` + cols + ` FROM ` + s.locks + ` WHERE 1 = 0`
}

// intentSlotBase starts the slots of mutex waiters' intent rows, one at a
// random slot each in [intentSlotBase, 2·intentSlotBase) — the INT
// column's upper half. The multi-row recipes allocate slots from 1 up and
// never read this range; store.Release deletes its rows instead of
// leaving tombstones.
const intentSlotBase = 1 << 30

// intentUpsert writes or refreshes an intent row at its own slot, in one
// statement; a row of another owner at that slot (a collision, or a
// leftover) is left alone. Parameters: name, slot, kind, owner, ttl µs,
// holder record.
func (s *statements) intentUpsert() string {
	ins := `INSERT INTO ` + s.locks + ` (name, slot, kind, owner, token, expires_at, holder) VALUES (` +
		s.p(1) + `, ` + s.p(2) + `, ` + s.p(3) + `, ` + s.p(4) + `, 0, ` + s.later(5) + `, ` + s.p(6) + `)`
	if s.d == fence.MySQL {
		return ins + ` ON DUPLICATE KEY UPDATE expires_at = IF(owner = VALUES(owner), VALUES(expires_at), expires_at)`
	}
	return ins + ` ON CONFLICT (name, slot) DO UPDATE SET expires_at = excluded.expires_at WHERE ` + s.locks + `.owner = excluded.owner`
}

// deleteRefs deletes n rows still owned by the given owners (intent rows
// of the intent range). Parameters: the refs (PostgreSQL: three arrays).
func (s *statements) deleteRefs(n int) string {
	if s.d == fence.Postgres {
		return `DELETE FROM ` + s.locks + ` AS l USING unnest($1::text[], $2::bigint[], $3::text[]) AS x(name, slot, owner)
WHERE l.name = x.name AND l.slot = x.slot AND l.owner = x.owner`
	}
	return `DELETE FROM ` + s.locks + ` WHERE ` + s.refList(n, 1)
}
