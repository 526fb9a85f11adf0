// Package fence is the resource side of baton: code that makes a database
// reject a write from a lock holder that is no longer the holder.
//
// # Why the fence is at the resource
//
// A lock grants coordination, not correctness. A holder can pause (GC,
// SIGSTOP, a VM migration) or be cut off longer than its session lives; the
// lock service then grants the lock to someone else, and when the first
// holder wakes up it still believes it holds the lock and sends its write.
// No lock client can stop that write from leaving the process: the client
// learns about the loss only after it runs again. Only the resource, which
// sees both writes, can order them. So every baton grant carries a fencing
// token that grows with every exclusive grant, the holder passes it with
// every write, and the resource keeps the highest token it has accepted and
// refuses older ones — in the same atomic step as the write. Checking the
// token in the application and then writing unconditionally reopens the
// race between check and write: a newer holder can write in between, and
// the stale write lands after it.
//
// # The rule
//
// For each resource the fence stores (token, owner): the token and the
// owner identity (baton.Lease.Owner) of the last accepted write. A write
// (token, owner) is
//
//   - accepted when the resource has no fence yet (the first write inserts it);
//   - accepted when token is greater than the stored token;
//   - accepted when token equals the stored token and owner equals the
//     stored owner: one grant writing several times (steps, retries);
//   - stale when token equals the stored token but owner differs;
//   - stale when token is lower.
//
// Two different grants of one lock never share a token, unless the token
// source went backwards: a Redis primary failed over to a replica that had
// not seen the last INCR, an engine rebuilt from scratch. The newcomer and
// the write already accepted cannot then be ordered, and the newcomer must
// not overwrite it; treating that equal token as stale makes the failure
// visible instead of letting two holders both write. Accepts states the
// rule in Go.
//
// Fence writes made under exclusive grants (mutex, write lock, leader).
// Readers and semaphore permit holders may share a token, so two of them
// writing to one fenced resource would refuse each other, as they should.
//
// A stale write returns a *StaleError, which wraps baton.ErrStaleToken and
// tells what the resource had accepted, and changes nothing at the fence.
// Roll the transaction back so your own writes in it go too.
//
// # Use it inside your own transaction
//
// Table is the fencing_tokens scheme (scheme 2 below): a table
// (resource, token, owner, updated_at) next to your business tables,
// advanced by one conditional upsert in the transaction that does your
// business write:
//
//	tx, err := db.BeginTx(ctx, nil)
//	…
//	defer tx.Rollback()
//	if err := fences.Advance(ctx, tx, "export-88", lease.Token(), lease.Owner()); err != nil {
//		return err // stale (errors.Is(err, baton.ErrStaleToken)) or a database error
//	}
//	// business writes through tx
//	return tx.Commit()
//
// Table.Write does exactly this around a function. Advance the fence
// before the business writes: the fence row stays locked until the
// transaction ends, so the fenced writers of one resource commit one at a
// time and a stale writer stops before it writes anything. The resource
// key is whatever you fence: usually the lock name, at most MaxResourceLen
// bytes.
//
// # The write's context
//
// Write with the lease's context (lease.Context(), or a context derived
// from it). Once this process learns that the lease is lost, that context
// is cancelled: a write then stops before it reaches the fence, or fails
// inside it, and its error wraps the context's cause, baton.ErrLost, as
// well as context.Canceled (WithCause). It is never a *StaleError, since
// the fence saw nothing to refuse. A holder that has not learnt of its
// loss yet (paused, cut off) still has a live context: its write reaches
// the fence, which refuses it as stale. Tell the two apart with errors.Is:
//
//	switch err := fences.Write(lease.Context(), db, "orders/42", lease.Token(), lease.Owner(), fn); {
//	case errors.Is(err, baton.ErrLost): // we knew we had lost the lock: nothing was written
//	case errors.Is(err, baton.ErrStaleToken): // a newer holder wrote first: nothing was written
//	}
//
// The lease's context also names the lock: a refusal carries it in
// StaleError.Name and in the event an Observer is told
// (baton.EventStaleRejected). A write made with another context (a
// request's, or under tokens minted outside baton) can name its lock with
// WithLockName.
//
// # The three SQL schemes
//
// There are three ways to fence writes to a SQL database; all three apply
// the same rule:
//
//  1. Row: token columns on the business row itself (fence_token,
//     fence_owner, added by Row.Migrate). Row.Update is the business
//     UPDATE with the rule in its WHERE clause; no second table, no second
//     lock. It tells a stale token (*StaleError) from a missing row
//     (sql.ErrNoRows) by reading the row back in the same transaction.
//     Use it when the resource is one existing row.
//  2. Table: the fencing_tokens table above, for resources that are not
//     one row (several tables, rows still to be created, files).
//  3. Tokens minted elsewhere — Redis INCR, another database's sequence,
//     another lock service — and checked here: Table and Row take any
//     uint64, so nothing changes in the code. What must hold is outside
//     it: every writer of a resource takes its tokens from the same
//     source, and that source never goes back (a Redis counter needs
//     persistence and must survive failover; see the token floor below).
//     Two sources, or one that restarts, produce tokens that do not order
//     the writers; the fence then refuses the newcomers (visible) or, with
//     unrelated sources, lets anyone through (not visible). A baton lease
//     is one such source, as long as the whole deployment uses one engine.
//
// # Dialects
//
// Set Table.Dialect (Row.Dialect, Publisher.Dialect), or get it once from
// DialectOf. On PostgreSQL and SQLite the fence is one statement, INSERT …
// ON CONFLICT (resource) DO UPDATE … WHERE (rule) RETURNING; a stale write
// updates no row and returns none.
//
// MySQL and MariaDB (github.com/go-sql-driver/mysql, MariaDB 10.2+ or
// MySQL 5.7+, InnoDB) have no RETURNING for that statement and no WHERE on
// its update part. There the fence is INSERT … ON DUPLICATE KEY UPDATE with
// every assignment conditional on the rule, followed by SELECT … FOR UPDATE
// of the row, still inside the caller's transaction: the upsert leaves the
// row exclusively locked, and the locking read sees the latest committed
// version (not the REPEATABLE READ snapshot) so it tells exactly whether
// the row now holds this write. The affected-rows count is never trusted:
// with clientFoundRows=true (CLIENT_FOUND_ROWS) an unchanged row counts as
// affected, without it a repeated identical write counts as unaffected;
// the fence is tested under both settings. Resource and owner columns are
// VARBINARY/BLOB, because the default collations compare text
// case-insensitively and ignore trailing spaces, which would let owner "A"
// pass for owner "a". DDL commits the surrounding transaction, so run
// Migrate on a *sql.DB. A deadlock among many first writers of one new
// resource (error 1213) is possible in InnoDB: retry the transaction.
//
// PostgreSQL (github.com/jackc/pgx/v5/stdlib, lib/pq): atomic under any
// concurrency at READ COMMITTED, because the conflicting row is locked and
// the WHERE re-checked against its latest version. At REPEATABLE READ or
// SERIALIZABLE a concurrent advance of the same resource fails with a
// serialization error (SQLSTATE 40001): retry the whole transaction.
//
// SQLite (modernc.org/sqlite, 3.35 or later): one writer at a time. Open
// the database with a busy timeout, so writers wait for the lock instead of
// failing with SQLITE_BUSY, and with immediate transactions, so BEGIN takes
// the write lock at once and a transaction that read first cannot fail
// when it later needs to write:
//
//	sql.Open("sqlite", "file:/path/app.db?_pragma=busy_timeout(5000)&_txlock=immediate")
//
// Tokens are stored as signed 64-bit integers: a token above MaxToken
// (2^63−1) is refused with baton.ErrInvalidOption, as are an empty owner
// or one longer than MaxOwnerLen, an empty or oversized resource key, and
// a table or column name that is not a plain identifier (or schema.table).
// Table and column names are validated, quoted, and the only text ever
// spliced into SQL; every value is a parameter.
//
// # Redis and object stores
//
// Package fence/redisfence is the same rule for data kept in Redis: one
// Lua script checks the fence hash and SETs or HSETs the value, or changes
// nothing and returns a *StaleError.
//
// Object stores without conditional writes cannot refuse a stale upload, so
// nothing is ever overwritten: Publisher uploads each grant's result as a
// new object "<name>/<token>-<owner tag>" and then publishes a pointer to
// it in a fenced database row (the Row scheme). A stale holder's pointer is
// refused and its upload is left as an orphan, which Orphans lists after a
// grace period for deletion. Readers follow the pointer (Published).
// ObjectStore is the three calls the pattern needs (Put, List, Delete);
// DirStore implements it on a directory.
//
// # The unfenced twins
//
// Unfenced (and UnfencedRow, UnfencedPublisher, redisfence.Unfenced) has
// the same methods and records every write unconditionally, as an
// application that trusts its lock would. Tests and baton demo run the same
// story against both: the stale write must be refused by Table and land
// through Unfenced, or the test cannot tell fencing from luck.
//
// # Token floor: recovering after the token source was rebuilt
//
// After the lock engine is rebuilt from scratch (a new ZooKeeper ensemble,
// a new etcd cluster, a lost Redis counter) its tokens restart below what
// the fences have stored, and every write is refused as stale. That is the
// fence working: it cannot tell the new holders from zombies. Do not lower
// or delete fence rows to get going again, which would let the zombies back
// in. Instead read the highest stored token (Table.Max on every fence
// table, and the largest fence_token of every Row table), and configure
// every client of the deployment with a baton token floor above it; new
// tokens then exceed everything the resources have seen.
package fence
