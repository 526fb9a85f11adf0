// Package tasks is a durable task table with fenced ownership: a runner
// model where the lock or the leader decides who should run, and the
// table decides whose results count.
//
// # Why the table decides
//
// A lock, or leadership, reduces conflicts: usually only one runner works
// on a task. It cannot make that certain. A runner can pause past its
// session, be replaced, and wake up with its result in hand. Correctness
// is decided at the resource, here the task row: every write carries the
// writer's (owner, epoch, version) and is one conditional UPDATE that
// affects no row when the writer has been superseded. The epoch is the fencing token of the grant that entitles
// the runner (ClaimantOf a *baton.Lease: a leader's or a lock's token);
// the version grows with every write and catches any change in between.
//
// # Life of a task
//
//   - Enqueue(key): PENDING. The key is unique, so a producer may retry.
//   - Claim: PENDING and due → RUNNING by the claimant, with a lease
//     (lease_until, by the database's clock), attempts+1. Claim also obeys
//     the fence rule: a task last run under a newer epoch is not claimed
//     under an older one.
//   - Heartbeat extends the lease; Checkpoint stores progress; Complete,
//     Fail and Retry end the claim. Each checks owner, epoch, version,
//     RUNNING and an unexpired lease in its WHERE clause.
//   - Takeover: when the owner's lease expired by the database's clock,
//     another claimant with a greater epoch takes the task with
//     version = seen AND epoch = seen AND lease_until < now, and resumes
//     from the last checkpoint.
//
// A write that affects no row changed nothing and says why: a *StaleError
// (baton.ErrStaleToken) when someone else owns the task now, an error
// wrapping baton.ErrLost when the lease expired and nobody has taken the
// task yet. An expired lease is never revived by a late heartbeat; the
// runner that wants the task back takes it over like anyone else, with a
// new epoch.
//
// The takeover story, as TestJ7Takeover runs it on every database: A owns J7 as
// RUNNING/A/81/v5 and pauses; its lease expires; B takes over with epoch
// 82 and the task becomes RUNNING/B/82/v6; A's late Complete with 81/v5
// affects no row and returns the stale error; B completes with 82/v6.
//
// # What it does not do
//
// The work between checkpoints runs again after a takeover, and a
// superseded runner's side effects outside the table are not undone: make
// steps idempotent (package idem), write checkpoints in the same
// transaction as the step's own effects where possible, and fence writes
// to other resources with the same epoch (package fence). Temporary
// artefacts of a superseded runner (export-88/701.tmp) are left for
// cleanup; only the current owner publishes.
//
// Every claimant of one table must take its epochs from one token source,
// or epochs cannot be compared. Times are microseconds of the database's
// clock, so runners' clocks never decide an expiry. PostgreSQL,
// MySQL/MariaDB and SQLite are supported, as in package idem.
package tasks
