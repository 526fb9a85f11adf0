// Package drill is baton's fault-drill harness: it records what clients of
// a lock and of a resource did, as a history, and checks that history
// against the invariants I1–I10 of the fault matrix, docs/faults.md at the
// root of the repository (invariant IDs and row numbers below are that
// document's). It is the
// evidence behind "a lock grants coordination, correctness is decided at
// the resource": a drill injects a fault, lets clients act through it, and
// then asks pure functions of the history whether mutual exclusion held at
// the resource, whether tokens only grew, whether a stale holder's write
// was rejected — and, on the unfenced twin of the resource, whether the
// same fault did break things, which proves the drill could fail.
//
// # History
//
// A history is one JSON line per event (Event): client, op, phase
// (invoke, ok, fail, unknown; info for point events such as observed lease
// states, watches, seeds), token, name and t_monotonic. Faults are events
// in the same stream (Recorder.Fault). An unknown outcome is never folded
// into a failure: the checkers allow it either way. Timestamps are
// CLOCK_MONOTONIC, which every process of a host shares, so a holder in a
// child process (frozen with SIGSTOP, killed with SIGKILL) writes its own
// history to its parent, which merges it in true order (Recorder.Ingest).
//
// Package drilltest ties a trial to a Go test (drilltest.Run): it logs
// the seed (BATON_DRILL_SEED replays it), writes history.jsonl into a
// directory kept when the test fails, and puts porcupine's HTML
// visualisation next to it when a resource history is not linearizable.
// drilltest.Trials gives the number of seeded trials: a few by default,
// BATON_DRILL_TRIALS for the long randomized drill (scripts/drill.sh).
// Package drill itself does not import package testing, so a program (the
// CLI's `baton drill`) links it without test code.
//
// # Checkers
//
//   - CheckRegister: the resource's reads and writes against FencedRegister,
//     a register that accepts a token greater than the highest accepted one
//     (or equal from the same owner) and rejects the rest, checked for
//     linearizability with porcupine (I3).
//   - CheckCounter: read-modify-write increments of a Counter; acknowledged
//     increments missing from the final value are lost updates, and two
//     accepted increments of different grants whose reads both preceded
//     both writes broke mutual exclusion at the resource (I1).
//   - CheckTokens (I2), CheckExclusive (I7 and lease-level exclusion),
//     CheckProgress (I5), CheckFIFO and CheckWakeups (I10) over the
//     grants of a lock (Grants).
//   - Orphans polls an engine's entry listing until the lock's queue is
//     empty (I8).
//   - CheckOccupancy: a resource shared by at most N holders (a Permits,
//     the semaphore's resource) never has more than N grants working at it
//     at once (I1 for N permits); CheckHolders is CheckExclusive for N.
//
// I4 (loss told, never silent or false), I6 (deadlines honoured) and I9 (a
// release removes only its own grant) are asserted by the drills directly
// on the lease states and results they observe.
//
// # Resource
//
// Counter is a real row in SQLite (OpenSQLite) or PostgreSQL, incremented
// by read-modify-write. Fenced, it goes through fence.Table: the read
// advances the fence, so an older holder can no longer write after a newer
// one has read, and a rejected write returns baton.ErrStaleToken. Unfenced,
// it writes directly: the negative control, which loses updates as soon as
// two holders overlap — Jepsen's etcd 3.4.3 finding.
//
// Permits is the semaphore's resource: one fence cannot guard what N
// holders share, so the fenced Permits keeps an admission table of at most
// N grants (a newer grant evicts the oldest) and rejects the uses of an
// evicted one; the unfenced twin admits everyone.
//
// # Scenarios
//
// Package drill/scenario holds the fault scenarios that `baton drill`
// runs against a user's deployment — a holder paused, killed, cut off,
// blackholed or slowed, a lost release answer, waiters cancelled in bulk,
// a herd, a waiter's session expiring — written once against a Target
// (open a client, start a holder child, scan for leftovers) and checked
// with this package's checkers. The drill tests run them on the test
// servers (scenario_test.go).
//
// The drills themselves (the _test files of this package, one or more rows
// per file: TestRow01… to TestRow15…) run the rows of docs/faults.md on
// every engine the row applies to — the queue engines (zklock, etcdlock)
// and the lease engines (sqllock, redislock, redlock) — and name the bug
// each reproduces. Rows 6 and 7 live beside their engines, in redislock
// and redlock.
package drill
