// Package leasing holds the recipes of the lease engines — mutex,
// read/write lock, semaphore and election — and the acquire loop they
// share, written once over a small store interface that each engine
// (redislock, sqllock, redlock) implements. It is the counterpart of
// package queuekit for engines whose locks are entries with a TTL, renewed
// by a keeper, rather than queue entries tied to a session.
//
// # What an engine implements
//
// A Store begins acquires: for each one it returns Attempts, whose Try
// makes one attempt (one script, one transaction) and says whether it was
// granted, refused, or failed with an unknown outcome. The engine keeps
// its wire layout, its scripts or SQL, and how it decides a grant
// (Redis decides in Lua, SQL in Go under a guard row); the loop decides
// when to try again and when to give up. Extra powers are optional
// interfaces found by type assertion, as raft finds its optional stores:
//
//   - Preparer: work before an acquire (SQL's schema);
//   - AttemptWatcher and Watcher: a wake-up source (Redis pub/sub,
//     PostgreSQL LISTEN/NOTIFY, releases in this process); without one,
//     waiters wake by backoff only (Redlock);
//   - Leaders: reading an election's leader;
//   - Binder: per-lock state built once when a lock object is made
//     (Redis' keys and script spec), handed back in Request.Bound;
//   - Result.Hint: the holder's expiry as the server reports it (Redis'
//     PTTL), so a waiter tries again right after it;
//   - Result.Reached: an attempt that failed although the server answered
//     (SQLite busy, a MySQL deadlock victim, a Redlock majority that
//     answered): the waiter is contended, not cut off;
//   - Permanent: an error retrying cannot fix (a Redis key of the wrong
//     type, a grant the replicas did not acknowledge, already unwound).
//
// Redlock serves only the mutex: its store refuses the other kinds.
//
// # The acquire loop
//
// Engine.Acquire re-enters a lease found in the context (engine.Reenter),
// then attempts until granted. A refused attempt, when the acquire waits,
// sleeps until a wake-up, the hint or the next backoff step (a wake-up
// starts the backoff over). A grant goes to the keeper with TokenFloor
// added: every lease engine's token is raw + TokenFloor, and a sum that
// would overflow uint64 is released and refused (baton.ErrInvalidOption)
// rather than wrapped.
//
// A failed attempt is handed back to the store (Attempts.Forget frees
// what it may have taken, owner-checked, through the keeper) and ends the
// acquire when ctx has ended (with baton.ErrUnavailable if no attempt
// ever got the server's answer), the client has closed, the error is
// permanent, the acquire makes one attempt only (baton.ErrUnavailable),
// or no attempt succeeded for TTL − DriftMargin: a lease held that long
// without a confirmed renewal would have been declared lost, so a waiter
// that long without an answer gives up with baton.ErrSessionLost and
// baton.ErrUnavailable. Otherwise it retries.
//
// # Options
//
// Options holds the settings every lease engine shares (TTL, DriftMargin,
// TokenFloor, BatchSize, Backoff) and Validate fills their documented
// defaults and checks them in one place; each engine validates only what
// is its own (key prefixes, table names, replica acknowledgements, node
// timeouts).
package leasekit
