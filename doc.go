// Package baton is the contract shared by every baton engine: the vocabulary
// of leases, fencing tokens, lease states and errors. It imports only the
// standard library; engines (zklock, etcdlock, …) and recipes import it,
// never the reverse.
//
// # A lock grants coordination, not correctness
//
// A holder can be paused, partitioned or slow. Its session can expire and
// another client can be granted the same lock while the first still believes
// it holds it. No lock service can stop a paused process from sending a late
// write. baton therefore gives every grant a fencing token and expects the
// resource to reject stale tokens (package fence ships that resource side).
//
// Every successful acquire returns a *Lease carrying:
//
//   - the lock name and a fencing token (uint64) strictly greater than the
//     token of every earlier exclusive grant of the same name on the same
//     deployment (plus the deployment's token floor, see TokenFloor);
//   - an owner identity unique to this grant;
//   - a state: Held, Suspended (ownership uncertain: pause side effects),
//     Lost (final) or Released;
//   - a context cancelled with a cause (ErrLost or ErrReleased) when the
//     lease ends, so work started under it stops by itself.
//
// State changes are observable without polling through Lease.Observe, and
// Lease.Done closes when the lease has ended.
//
// # What each engine guarantees
//
// ZooKeeper (package zklock): the lease is tied to a ZooKeeper session. The
// holder is told Suspended as soon as the connection drops and Lost when the
// session timeout could have run out on the server (measured from the
// disconnect, with a safety margin), on session expiry, or on any change of
// the session ID. The token is the Pzxid of the lock directory read by the
// Children call that granted the lock; it strictly increases across
// exclusive grants because the next holder's granting read already reflects
// the previous holder's deletion, and zxids survive container re-creation.
//
// etcd (package etcdlock): the lease is an etcd lease kept alive by baton's
// own KeepAliveOnce loop so send times are known. The holder is told
// Suspended when a keepalive answer is late and Lost before the lease can
// have expired on the server (deadline from the send time of the last
// answered keepalive on the monotonic clock, minus a drift margin). The token
// is the create revision of the holder's key.
//
// Neither guarantee survives a host that suspends (a VM or laptop sleep):
// Go's monotonic clock stops, so "Lost before the server expires" cannot
// hold across it. Fencing does: a resource that checks tokens rejects the
// late writer regardless of clocks.
//
// # Reentrancy
//
// Go has no thread identity, so ownership is explicit: the lease's context
// marks ownership. Calling Lock again on the same lock object with a context
// derived from lease.Context() re-enters: the same *Lease is returned and its
// hold count goes up. Each Release lowers the count; the last one removes the
// remote entry. Releasing more often than acquired returns ErrNotHeld.
//
// # Token floor
//
// After an engine is rebuilt from scratch (a new ZooKeeper ensemble, a new
// etcd cluster, a lost Redis counter) its native tokens restart below values
// the resources have already seen, and every write would be rejected as
// stale. The recovery procedure: read the highest token the resources store,
// and configure every client of the deployment with a TokenFloor above it.
// Every token the engine issues is then raw+TokenFloor.
package baton
