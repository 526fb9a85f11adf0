// Package queue holds baton's queue recipes, written once over a small
// interface that the ZooKeeper and etcd adapters implement (as client-go's
// leader election asks each backend only for a record interface).
//
// A queue engine keeps, under a lock directory, an ordered queue of
// ephemeral entries tied to a session. A recipe is a function of the sorted
// queue: the mutex grants the first entry. Every waiter watches only the
// entry that blocks it (so a release wakes one waiter, not the herd) and,
// after every wake-up, re-reads the queue: events only wake, state decides.
// An event is never taken as a grant, and a waiter whose own entry has
// vanished (its session died) fails with baton.ErrSessionLost instead of
// acquiring on a dead queue position (CURATOR-604).
//
// An engine implements Backend and Session. The engine owns the hard parts
// that differ per engine: protected create after a lost response, what the
// session's state is, how a token is read, how a watch is registered so it
// cannot miss a deletion that happened after the read (CURATOR-527).
//
// The acquire loop is also the one place where every engine's acquires are
// observed (MutexOptions.Observer): engines report only what the loop
// cannot see, such as a create of unknown outcome that recovery adopted,
// and tie it to its acquire with AcquireID.
package queuekit
