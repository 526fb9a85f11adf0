// Package sqllock is baton's SQL lock engine: leases on rows of a table in
// PostgreSQL, MySQL/MariaDB or SQLite, reached through the caller's
// *sql.DB, kept alive by package keeper.
//
// # Drivers
//
// The dialect is recognised from the driver (see fence.DialectOf):
// PostgreSQL through github.com/jackc/pgx/v5/stdlib (driver "pgx"; lib/pq
// works too, without LISTEN/NOTIFY wake-ups), MySQL and MariaDB through
// github.com/go-sql-driver/mysql (driver "mysql"), SQLite through
// modernc.org/sqlite (driver "sqlite", pure Go). This package imports none
// of the MySQL or SQLite drivers: the program opening the *sql.DB does.
//
// For SQLite open the database with writers waiting instead of failing and
// immediate transactions:
//
//	file:/path/locks.db?_pragma=busy_timeout(5000)&_pragma=journal_mode(wal)&_txlock=immediate
//
// For MySQL, interpolateParams=true saves a prepare round trip per
// statement; clientFoundRows may be either.
//
// # Schema
//
// Migrate creates the schema; New runs it too unless Options.NoMigrate is
// set. Every statement is idempotent (IF NOT EXISTS). With the default
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
//	    PRIMARY KEY (name, slot));
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
//	    PRIMARY KEY (name, slot)) ENGINE=InnoDB;
//	CREATE TABLE IF NOT EXISTS baton_tokens (
//	    id TINYINT NOT NULL PRIMARY KEY, v BIGINT UNSIGNED NOT NULL) ENGINE=InnoDB;
//	INSERT IGNORE INTO baton_tokens (id, v) VALUES (1, 0);
//
// SQLite (expires_at in microseconds since the Unix epoch):
//
//	CREATE TABLE IF NOT EXISTS baton_locks (
//	    name TEXT NOT NULL, slot INTEGER NOT NULL DEFAULT 0,
//	    kind TEXT NOT NULL DEFAULT 'mutex', owner TEXT NOT NULL DEFAULT '',
//	    token INTEGER NOT NULL DEFAULT 0, expires_at INTEGER NOT NULL,
//	    renewal INTEGER NOT NULL DEFAULT 0,
//	    PRIMARY KEY (name, slot)) WITHOUT ROWID;
//	CREATE TABLE IF NOT EXISTS baton_tokens (
//	    id INTEGER PRIMARY KEY CHECK (id = 1), v INTEGER NOT NULL);
//	INSERT OR IGNORE INTO baton_tokens (id, v) VALUES (1, 0);
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
// PostgreSQL acquires with one statement: an UPDATE of the row if it is
// free, or an INSERT of it if it does not exist, both in one WITH query;
// the token is nextval of the sequence, evaluated under the row's lock.
// MySQL (MariaDB has no UPDATE … RETURNING) and SQLite use one short
// transaction: a conditional upsert that takes the row only if it is free
// (and locks it), then the one-row counter advanced by one, then the token
// written to the row. The token source is shared by every name: it grows
// with grants, never with the number of names.
//
// Tokens strictly increase across the grants of one name because every
// grant after the first takes its token while holding the row's lock, after
// the previous grant's token was committed. That is why a release does not
// delete the row: it only clears the owner (a "tombstone"), and the next
// grant goes through the locked path. Prune deletes rows that have been
// free for a long time; a PostgreSQL INSERT that evaluated nextval more than
// olderThan earlier could then store a smaller token than a grant made and
// pruned in between, so choose olderThan far beyond any statement's
// duration (an hour is the suggestion).
//
// Renewal and release are conditional on the owner value of the grant (a
// random 128-bit identity per acquire), and renewal also on the row not
// having expired: a renewal never re-takes an expired row, and a stale or
// retried release never frees a newer grant. Renewals are batched by the
// keeper: one statement per Options.BatchSize held leases.
//
// # Waiting
//
// A waiter holds no row: it retries the acquire with jittered exponential
// backoff (baton.Backoff, capped at TTL/4 so an expired holder is noticed
// promptly). On PostgreSQL with pgx, a release sends NOTIFY on a channel
// named after the table, and a LISTENing connection (below) wakes this
// process's waiters of that name, so they retry as soon as it is
// released; releases in the same process wake waiters directly on every
// dialect. A waiter that cannot reach the
// database for a whole TTL fails with baton.ErrSessionLost (on SQLite, a
// busy database counts as reached: it is embedded and cannot be
// partitioned away).
//
// On PostgreSQL, a process keeps one LISTEN connection per database server
// and table, shared by all its Clients and taken from one of their pools;
// size pools with it in mind.
package sqllock
