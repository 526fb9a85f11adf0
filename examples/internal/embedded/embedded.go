// Package embedded opens the SQLite databases the examples run on: the
// zero-setup default of baton (modernc.org/sqlite, pure Go, one file), with
// the settings packages sqllock and fence ask for.
//
// It also opens a database through a Freezer, so that an example can stop
// one simulated process dead — its lock keeper's renewals and its own
// statements alike — as SIGSTOP or a long GC pause would, without leaving
// the test's process.
package embedded

import (
	"database/sql"
	"path/filepath"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// DSN options: a busy timeout so writers wait for SQLite's one write lock
// instead of failing, WAL so readers do not block the writer, and
// immediate transactions so BEGIN takes the write lock at once (a
// transaction that read first can then never fail when it writes).
const dsnOptions = "?_pragma=busy_timeout(10000)&_pragma=journal_mode(wal)&_txlock=immediate"

// DSN returns the data source name of the database file name in dir.
func DSN(dir, name string) string {
	return "file:" + filepath.Join(dir, name) + dsnOptions
}

// Open opens the database file name in dir (created at the first use).
func Open(dir, name string) (*sql.DB, error) {
	return sql.Open("sqlite", DSN(dir, name))
}
