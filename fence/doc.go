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
// race between check and write (seed 000, 2.4.5.5).
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
// Table is the fencing_tokens scheme (seed 004, question 4, scheme 2): a
// table (resource, token, owner, updated_at) next to your business tables,
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
// before the business writes: on PostgreSQL the fence row stays locked
// until the transaction ends, so the fenced writers of one resource commit
// one at a time and a stale writer stops before it writes anything. The
// token need not come from a baton lock: a token minted elsewhere (seed 004
// scheme 3, such as Redis INCR) is checked the same way, as long as every
// writer of the resource gets its tokens from the same source. The
// resource key is whatever you fence: usually the lock name, at most
// MaxResourceLen bytes.
//
// # Dialects
//
// The statement is INSERT … ON CONFLICT (resource) DO UPDATE … WHERE
// (rule) RETURNING; a stale write updates no row and returns none. Set
// Table.Dialect, or get it once from DialectOf.
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
// (2^63−1) is refused with baton.ErrInvalidOption, as are an empty owner,
// an empty or oversized resource key and a table name that is not a plain
// identifier (or schema.table); table names are validated, quoted, and the
// only text ever spliced into SQL.
//
// # The unfenced twin
//
// Unfenced has the same methods and records every write unconditionally,
// as an application that trusts its lock would. Tests and baton demo run
// the same story against both: the stale write must be refused by Table
// and land through Unfenced, or the test cannot tell fencing from luck.
//
// # Token floor: recovering after the token source was rebuilt
//
// After the lock engine is rebuilt from scratch (a new ZooKeeper ensemble,
// a new etcd cluster, a lost Redis counter) its tokens restart below what
// the fences have stored, and every write is refused as stale. That is the
// fence working: it cannot tell the new holders from zombies. Do not lower
// or delete fence rows to get going again, which would let the zombies
// back in. Instead read the highest stored token (Table.Max on every fence
// table, and any token column of your own), and configure every client of
// the deployment with a baton token floor above it; new tokens then exceed
// everything the resources have seen.
package fence
