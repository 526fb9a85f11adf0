// Package idem records idempotency keys in a database, so that a request
// repeated under the same key returns the recorded outcome instead of
// being carried out again.
//
// # Why a lock is not enough
//
// A lock reduces how often two processes work on the same thing; it does
// not decide what the world accepted. A holder can send a request, pause,
// lose its lock and wake up to send it again; a new holder can retry a
// request whose response was lost. The supplier that sells a shipping
// label, the channel that takes a payment, the table that publishes an
// export each see two requests. Correctness is decided at the resource:
// a fencing token (package fence) refuses the writer that is no longer
// entitled, and an idempotency key makes one logical request count once
// however often it is sent. The two do different jobs and are used
// together: the key says "this is the same request", the token says "this
// sender is no longer the owner".
//
// # States
//
// Each key moves INIT → REQUESTING → SUCCESS | FAILED | UNKNOWN, one
// conditional UPDATE per step (WHERE key = ? AND state = ? AND version = ?),
// so of any number of callers with one key exactly one makes the call:
//
//   - INIT: recorded, certainly not sent. Whoever moves it to REQUESTING
//     first sends it.
//   - REQUESTING: being sent; it may have arrived. A caller that stays
//     here past Options.RequestBudget is presumed dead and the record is
//     treated as UNKNOWN.
//   - SUCCESS: the result is recorded and returned to every repeat.
//   - FAILED: the call certainly did not take effect; final.
//   - UNKNOWN: the call returned an error after the request may have left
//     (a timeout, a reset connection, the caller's cancelled context).
//
// UNKNOWN is never folded into FAILED: a timeout says nothing about
// whether the supplier bought the label, and a FAILED record invites a
// retry that buys a second one. A call marks a definite failure with Fail;
// every other error is UNKNOWN. UNKNOWN is settled by the caller's query
// function — the supplier's lookup, a read of the resource — never by
// sending again blindly; a query that proves the request never arrived
// returns INIT, and only then is it sent again, under the same key.
//
// # The manual handling list
//
// Some suppliers have no query API: nothing can prove whether a request
// whose answer was lost arrived. Their unknowns,
// and unknowns that queries cannot settle, move to the manual handling
// list after Options.UnknownBudget (Stuck lists them). From then on Do
// calls and queries nothing for the key and returns ErrManual: a person
// reconciles it with the supplier's bill and records the answer with
// Resolve. A caller that hangs past its budget and then returns finds the
// record resolved and gets ErrConflict, with both outcomes in the error —
// a discrepancy to look at, not to overwrite.
//
// # Tables and dialects
//
// One table (Migrate creates it): the key (at most MaxKeyLen bytes, exact
// bytes on every database), state, result, error text, owner, version,
// attempts, the manual flag and two times in microseconds of the
// database's clock. PostgreSQL, MySQL/MariaDB (go-sql-driver/mysql) and
// SQLite (modernc.org/sqlite; open it with a busy timeout, as package
// fence describes) are supported; the dialect is recognised from the
// driver or set in Options.Dialect. Decisions use affected-row counts of
// UPDATEs that always change the version, so MySQL's clientFoundRows
// setting does not matter.
//
// The call runs outside any database transaction: holding a transaction
// (or a lock) open while a third party answers blocks everyone behind it
// and still decides nothing: the third party's outcome is not part of the
// transaction.
package idem
