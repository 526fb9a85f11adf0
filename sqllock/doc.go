// Package sqllock is baton's SQL lock engine: leases on rows of a table in
// PostgreSQL, MySQL/MariaDB or SQLite, reached through the caller's
// *sql.DB, kept alive by package keeper.
//
// New takes the program's *sql.DB and returns the *baton.Client every
// engine gives, as baton.Open does for a URL: its locks are package
// baton's *baton.Mutex, *baton.RWMutex, *baton.Semaphore and
// *baton.Election. What only this engine does is on the *sqllock.Client
// behind it, reached with baton.As[*sqllock.Client]: Migrate,
// SetNoMigrate, Prune, DB and Stats. A lock's own powers are reached the
// same way on the lock: a mutex's LockFor and TryLockFor (a lease of a
// fixed time, never renewed), a semaphore's OnDisagreement.
//
//	locks, err := sqllock.New(db, sqllock.Options{})
//	…
//	m, err := locks.Mutex("reports/daily")
//	…
//	fixed, ok := baton.As[interface {
//		LockFor(context.Context, time.Duration) (*baton.Lease, error)
//	}](m)
//	if ok {
//		l, err := fixed.LockFor(ctx, time.Minute) // lost after a minute, unless released
//		…
//	}
//
// # Drivers
//
// The dialect is recognised from the driver (see fence.DialectOf):
// PostgreSQL through github.com/jackc/pgx/v5/stdlib (driver "pgx"; lib/pq
// works too, without LISTEN/NOTIFY wake-ups), MySQL and MariaDB through
// github.com/go-sql-driver/mysql (driver "mysql"), SQLite through
// modernc.org/sqlite (driver "sqlite", pure Go). The program opening the
// *sql.DB imports its driver; this package imports pgx and, for Open's
// mysql:// URLs, go-sql-driver/mysql, but no SQLite driver.
//
// For SQLite open the database with writers waiting instead of failing and
// immediate transactions:
//
//	file:/path/locks.db?_pragma=busy_timeout(5000)&_pragma=journal_mode(wal)&_txlock=immediate
//
// For MySQL, interpolateParams=true saves a prepare round trip per
// statement; clientFoundRows may be either.
//
// # Open
//
// baton.Open serves the SQL URLs of baton's CLI, once this package is
// imported:
//
//	postgres://user:pass@host:5432/db?sslmode=verify-full   (postgresql:// too)
//	mysql://user:pass@host:3306/db?tls=true
//	sqlite:///absolute/path/locks.db
//
// PostgreSQL URLs are pgx's (several hosts, sslmode, sslrootcert, sslcert,
// target_session_attrs…); pgx reads the PG* variables, ~/.pgpass and the
// service file from the process itself. A MySQL URL takes only tls= (true,
// false, skip-verify, preferred); with tls=true, BATON_SQL_CACERT names
// the CAs that verify the server (else the system roots) and
// BATON_SQL_CERT / BATON_SQL_KEY a client certificate. A SQLite URL is an
// absolute file and nothing else: Open sets the busy timeout, WAL and
// immediate transactions above, and the program imports a driver
// registered as "sqlite" (modernc.org/sqlite). Credentials missing from
// the URL come from BATON_SQL_USER and BATON_SQL_PASSWORD, then from the
// driver's own (PGPASSWORD, ~/.pgpass; MYSQL_PWD); baton.WithGetenv
// replaces the environment for all of them but pgx's PG* variables.
// Hosts reads, offline, the hosts a URL dials, for a warning about a
// plain-text link before Open (a PostgreSQL URL is parsed once for
// baton.CheckURL, Hosts and Open).
//
// Open proves the connection with a ping, retried until the connect
// timeout (a database that is restarting is not down yet) unless the
// server refuses the login (baton.ErrAuth). The client owns the *sql.DB
// it opened (the *Client's DB returns it; the *baton.Client's Close
// closes it) and creates the schema at its first use, as New's do.
// baton.As hands back the *Client: Migrate creates the schema at once (so
// that a missing privilege shows at start-up), and SetNoMigrate, before
// the first use, makes the client run no DDL at all, as Options.NoMigrate
// does: a read-only tool (baton inspect, the exporter) reads with the
// *baton.Client's Inspect, which never creates the schema anyway.
//
// # Schema
//
// Migrate creates the schema; a client runs it too at its first use
// unless Options.NoMigrate is set, in which case it runs no DDL and only
// checks that the table has every column it needs (a missing table or
// column fails the first acquire with an error that says to run Migrate).
// Every statement is idempotent (IF NOT EXISTS). With the default
// TablePrefix "baton_":
//
// PostgreSQL:
//
//	CREATE TABLE IF NOT EXISTS baton_locks (
//	    name       text        NOT NULL,
//	    slot       integer     NOT NULL DEFAULT 0,
//	    kind       text        NOT NULL DEFAULT 'mutex',
//	    owner      text        NOT NULL DEFAULT '',
//	    token      bigint      NOT NULL DEFAULT 0,
//	    expires_at timestamptz NOT NULL,
//	    renewal    bigint      NOT NULL DEFAULT 0,
//	    data       text        NOT NULL DEFAULT '',
//	    holder     varchar(256),
//	    waiting    boolean     NOT NULL DEFAULT false,
//	    PRIMARY KEY (name, slot));
//	ALTER TABLE baton_locks ADD COLUMN IF NOT EXISTS data text NOT NULL DEFAULT '',
//	    ADD COLUMN IF NOT EXISTS holder varchar(256),
//	    ADD COLUMN IF NOT EXISTS waiting boolean NOT NULL DEFAULT false;
//	CREATE SEQUENCE IF NOT EXISTS baton_token_seq;
//
// MySQL/MariaDB (InnoDB; names are compared byte for byte, as on the other
// engines; expires_at is UTC):
//
//	CREATE TABLE IF NOT EXISTS baton_locks (
//	    name       VARBINARY(1024) NOT NULL,
//	    slot       INT             NOT NULL DEFAULT 0,
//	    kind       VARCHAR(16)     NOT NULL DEFAULT 'mutex',
//	    owner      VARCHAR(64)     NOT NULL DEFAULT '',
//	    token      BIGINT UNSIGNED NOT NULL DEFAULT 0,
//	    expires_at DATETIME(6)     NOT NULL,
//	    renewal    BIGINT          NOT NULL DEFAULT 0,
//	    data       VARCHAR(1024)   NOT NULL DEFAULT '',
//	    holder     VARCHAR(256)    NULL,
//	    PRIMARY KEY (name, slot)) ENGINE=InnoDB;
//	CREATE TABLE IF NOT EXISTS baton_tokens (
//	    id TINYINT NOT NULL PRIMARY KEY, v BIGINT UNSIGNED NOT NULL) ENGINE=InnoDB;
//	INSERT IGNORE INTO baton_tokens (id, v) VALUES (1, 0);
//	-- MariaDB only; on a table already in use, run Migrate instead, which
//	-- starts the sequence above the counter and retires the counter:
//	CREATE SEQUENCE IF NOT EXISTS baton_token_seq;
//
// SQLite (expires_at in microseconds since the Unix epoch):
//
//	CREATE TABLE IF NOT EXISTS baton_locks (
//	    name TEXT NOT NULL, slot INTEGER NOT NULL DEFAULT 0,
//	    kind TEXT NOT NULL DEFAULT 'mutex', owner TEXT NOT NULL DEFAULT '',
//	    token INTEGER NOT NULL DEFAULT 0, expires_at INTEGER NOT NULL,
//	    renewal INTEGER NOT NULL DEFAULT 0, data TEXT NOT NULL DEFAULT '',
//	    holder TEXT, PRIMARY KEY (name, slot)) WITHOUT ROWID;
//	CREATE TABLE IF NOT EXISTS baton_tokens (
//	    id INTEGER PRIMARY KEY CHECK (id = 1), v INTEGER NOT NULL);
//	INSERT OR IGNORE INTO baton_tokens (id, v) VALUES (1, 0);
//
// The data column (candidate IDs, semaphore sizes) came with the
// read/write lock, semaphore and election, the holder column with
// baton.Open, PostgreSQL's waiting column (see Waiting) with the release
// that notifies only waiters: on a table created before them, Migrate (or
// a client's first use, without Options.NoMigrate) adds them (PostgreSQL with ADD
// COLUMN IF NOT EXISTS; MySQL and SQLite, which lack that clause, after
// looking the columns up in information_schema.columns or
// pragma_table_info). Inspect reads a table without them, read-only.
//
// The holder column is the holder record (baton.Process: host, pid,
// program, labels, as engine.ProcessData encodes them, at most
// baton.MaxProcessLen bytes) of the grant or waiter that owns the row,
// for Inspect and baton inspect. The statement that grants (or writes a
// waiter's intent) writes it, so it costs no request; a release clears
// it. An older version's grant leaves it as it was: while versions are
// mixed, a row an older client took over after it expired may show its
// previous holder's record.
//
// A row is free when its expires_at is not in the future on the database
// clock; owner is ” after a release. A mutex is slot 0 of its name.
//
// # Acquire, renew, release
//
// Expiry is judged by the database clock only: clock_timestamp() on
// PostgreSQL (not now(), which is the start of the transaction),
// UTC_TIMESTAMP(6) on MySQL (not NOW(6), which follows the session's time
// zone), julianday('now') on SQLite. Client clocks never enter a row.
//
// PostgreSQL acquires with one statement: an upsert that inserts the row
// if it is missing, or takes it if it is free, and returns no row when it
// is held. The token of a taken row is nextval of the sequence, evaluated
// under the row's lock. MariaDB (which has no UPDATE … RETURNING) acquires
// with one autocommitted conditional statement that takes the row with
// the sequence's NEXTVAL as its token only if the row is free and holds a
// smaller token; the token comes back as LAST_INSERT_ID. The statement is
// an upsert at a lock object's first attempt, and an UPDATE of the row
// once the object has seen the row (cheaper: an upsert tries the insert
// first); an UPDATE that finds no row is followed by the upsert. MySQL,
// which has no sequences, first advances the one-row counter in a
// statement of its own, then sends the upsert with that value (see
// sequence.go for the move from the counter to the sequence). SQLite uses
// one short transaction (BEGIN IMMEDIATE): a conditional upsert that
// takes the row only if it is free, with the counter's next value as its
// token, then the counter advanced by one. The token source is shared by
// every name: it grows with attempts on MySQL, with grants on SQLite and
// on MariaDB (and with its upserts' refusals), never with the number of
// names.
//
// Tokens strictly increase across the grants of one name because every
// grant after the first either takes its token while holding the row's
// lock, after the previous grant's token was committed (PostgreSQL,
// SQLite), or stores its token only over a smaller one (MariaDB, MySQL: a token
// taken before another client's grant and release of the name is refused,
// and the attempt is retried like any refused one). That is why a release
// does not delete the row: it only clears the owner (a "tombstone") and
// keeps the token, and the next grant goes through the checked path.
// Prune deletes rows that have been free for a long time; an INSERT whose
// token was taken more than olderThan earlier (a nextval, a MySQL
// counter bump) could then store a smaller token than a grant made
// and pruned in between, so choose olderThan far beyond any statement's
// duration (an hour is the suggestion).
//
// Renewal and release are conditional on the owner value of the grant (a
// random 128-bit identity per acquire), and renewal also on the row not
// having expired: a renewal never re-takes an expired row, and a stale or
// retried release never frees a newer grant. Renewals are batched by the
// keeper: one statement per Options.BatchSize held leases.
//
// # Read/write locks, semaphores, elections
//
// RWMutex, Semaphore and Election keep several rows under one name, at
// slots ≥ 1: one per holder (kind "read", "write", "permit", "leader")
// and one per waiter, its intent ("rwait", "wwait", "swait", "cwait").
// Slot -1 is the name's guard row (kind "guard", never owned). An attempt
// is one short transaction: a locking upsert of the guard row serialises
// the attempts on the name (SQLite's immediate transactions serialise
// them anyway); the name's rows are read with their liveness judged by
// the database clock; Go decides; one row is written — the grant, with a
// token from the sequence or counter, or the waiter's intent — and rows
// whose lease expired are reaped (owner cleared). Tokens of a name
// therefore strictly increase across grants of every kind, readers'
// included.
//
// A waiter's intent row carries a ticket (from the same token source) and
// is refreshed by each retry, at most TTL/4 apart, so it expires by
// itself a TTL after its waiter died; a waiter that gives up releases it
// like a lease, owner-checked. Waiters are served in ticket order where
// order matters: a reader waits for writers queued before it, so writers
// are not starved; a writer or a candidate waits for everyone queued
// before it; a semaphore permit goes to the earliest waiters first. A
// live row the recipe does not know (a Mutex's slot 0, another recipe's
// row under the same name) counts as an exclusive holder: give different
// objects different names. Renewal and release of these rows are the
// keeper's, batched, as for the mutex.
//
// A client cut off between two statements of an attempt leaves its
// transaction open on the server, with the guard row locked. On
// PostgreSQL the attempt sets idle_in_transaction_session_timeout (TTL/3)
// so the server ends such a session promptly. On MariaDB, set
// idle_transaction_timeout (seconds) on the lock client's connections,
// e.g. in the DSN: "…/db?idle_transaction_timeout=2" (the driver sets
// unknown DSN parameters as session variables); it ends only sessions
// idle inside a transaction. MySQL has no such variable: the lock lasts
// until the server drops the connection (wait_timeout, or TCP
// keepalive); keep wait_timeout short for lock clients. (The mutex's
// acquire holds no transaction there.)
// Only that one name stalls: MariaDB's sequence has no row to hold, and
// on MySQL the shared token counter is bumped in an autocommitted
// statement on another pooled connection (while the transaction holds the
// name's lock, so tokens still increase per name), never inside the
// attempt's transaction, so a cut-off client cannot hold the counter's
// row and stall every name. That needs a second connection
// while the transaction holds one, so it is done only when the pool is
// unlimited (database/sql's default, and the CLI's); with SetMaxOpenConns
// the bump stays inside the transaction.
//
// Semaphore rows store their N; a client whose attempt (granted or not)
// reads rows taken with another N reports them to the semaphore's
// OnDisagreement (reached through baton.As), each row once. No stored N
// wins: each client admits by its own N, as on Redis and ZooKeeper.
// Election rows store the candidate ID, which Election.Leader and Observe
// report; Observe polls every TTL/4 (within [100ms, 1s]) and also reads
// at once after a release of the name is seen.
//
// # Waiting
//
// A mutex waiter holds no lock row: it retries the acquire when woken by
// a release, and polls as a safety net. On PostgreSQL with pgx, a release
// sends NOTIFY on a channel named after the table, and a LISTENing
// connection (below) wakes this process's waiters of that name; releases
// in the same process wake waiters directly on every dialect. A mutex's
// release NOTIFYs only when somebody waits: a refused attempt marks the
// row (its waiting column, once per grant), a grant clears the mark
// unless more waiters of the name wait in the granted process, and the
// release's statement NOTIFYs only for a marked row, so an uncontended
// lock+unlock sends none (the multi-row recipes' releases always do). A release
// wakes one mutex waiter per process, the one that has waited longest
// there (wake.go has the details): a handoff costs the same few requests
// with 5 waiters or 2 000. A refused waiter's next poll comes no sooner
// than n × Backoff.Max/2 (n its process's waiters of the lock, capped at
// TTL/2), so that they together poll about once per Backoff.Max/2; the
// read/write lock, the semaphore and the election wake all their waiters
// and retry with jittered exponential backoff (baton.Backoff, capped at
// TTL/4 so an expired holder is noticed promptly). On PostgreSQL and
// MySQL a mutex waiter that has waited min(TTL/4, 1s) also keeps an
// intent row ("mwait", refreshed every 3/8 TTL at most; on PostgreSQL
// written, refreshed and deleted by its attempts' own statements, on MySQL
// by one upsert of its own) so that Inspect and baton inspect list it; it
// never decides a grant. It
// lives at a random slot in [2^30, 2^31), which the multi-row recipes
// never read, and is deleted, not tombstoned, when the wait ends. SQLite has none: every write
// there waits for the one file lock, and with dozens of waiters the extra
// writes would starve the holders' renewals. A waiter that cannot reach the
// database for TTL − DriftMargin fails with baton.ErrSessionLost (on
// SQLite, a busy database counts as reached: it is embedded and cannot be
// partitioned away; so does a MySQL deadlock victim). The waiting itself
// is package leasekit's acquire loop, shared by every lease engine; this
// package supplies the attempts (statements), the wake-ups and the
// contention rule.
//
// On PostgreSQL, a process keeps one LISTEN connection per database server
// and table, shared by all its Clients and taken from one of their pools;
// size pools with it in mind.
//
// On PostgreSQL and MySQL each Client also keeps a connection of its pool
// for renewals, unless the pool allows two connections or fewer, and one
// for releases, unless it allows three or fewer (opened at the first use,
// when the database answers promptly, with the statements prepared on
// them). Renewals use theirs when it is free: a cancelled query elsewhere
// on the pool closes its connection, and on a slow link a renewal that had
// to open a new one (TCP, startup, prepare, execute) did not fit in what
// the lease had left. A release runs on an idle connection of the pool
// when there is one (usually the one its acquire just returned), else on
// its kept one when that is free.
//
// On SQLite each Client keeps one connection of its pool for its mutex
// attempts and releases, with their statements (BEGIN IMMEDIATE and
// COMMIT among them) prepared on it once, unless the pool allows two
// connections or fewer; an attempt or release that finds it in use runs
// on the pool. Only an attempt's BEGIN IMMEDIATE runs under the
// attempt's context, which the attempt timeout (TTL/3) and Close end: it
// is the step that waits for the file's write lock, so an attempt
// blocked behind another writer still ends within its bound, and Close
// cuts it. The statements after it run on a context that cannot end:
// they hold the write lock, run in this process in microseconds with no
// network between, and the busy timeout bounds any wait they could meet;
// a context that can end cost a goroutine per statement in the driver
// (modernc.org/sqlite watches each such context to interrupt the
// statement) and would only have bought a transaction to roll back.
//
// With SetMaxOpenConns(n), call SetMaxIdleConns(n) too. database/sql
// keeps only two idle connections by default and closes the rest as soon
// as a burst of attempts ends, so every burst of waiters (a release
// wakes them, a safety-net poll comes due) opens connections again. On
// PostgreSQL each is a new server process with its startup and
// authentication; a hundred waiters sharing a pool of 24 under load saw
// connects and first statements outlast the attempt timeout (TTL/3), and
// with a 2-second TTL some waiters' acquires failed with
// baton.ErrSessionLost although the server answered everything else. The
// pool's Stats().MaxIdleClosed counts the connections lost that way.
package sqllock
