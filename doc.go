// Package baton is one API for distributed locks on every engine it
// serves — ZooKeeper, etcd, Redis, Redlock, PostgreSQL, MySQL, SQLite and,
// for unit tests, an in-memory server — with a fencing token on every
// grant. It depends on nothing outside the standard library (its one
// other import, internal/bridge, joins it to package engine); engines
// (zklock, etcdlock, …) implement package engine and register their URL
// schemes, as database/sql drivers do:
//
//	import (
//		"github.com/baton-go/baton"
//		_ "github.com/baton-go/baton/redislock" // redis:// and rediss://
//	)
//
//	c, err := baton.Open(ctx, "redis://127.0.0.1:6379")
//	m, err := c.Mutex("orders/42")
//	lease, err := m.Lock(ctx)
//	defer lease.Release(context.Background())
//	// write with lease.Token(); stop when lease.Context() ends
//
// A *Client is the same type on every engine, and so are its Mutex,
// RWMutex, Semaphore, Election and Inspection: code written against it
// runs on any engine, and its tests run on memlock (mem://NAME) with no
// adapter. A program that already has a client of its engine keeps it:
// each engine's constructor takes it (a go-redis client, a *sql.DB, an
// etcd client) and its Baton method gives the *Client. As reaches what one
// engine alone can do (Redis's statistics, SQL's Migrate and Prune).
//
// Inspect shows who holds a lock: every grant records its host, pid,
// program and labels (WithLabel) where the engine can store them.
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
//     deployment (the engine's raw counter plus the deployment's token
//     floor, see "Token floor" below);
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
// holder is told Suspended as soon as the connection drops and Lost when
// the session timeout could have run out on the server (measured from the
// last moment a reply proved the server heard the client, with a safety
// margin), on session expiry, or on any change of the session ID. The token
// is the Pzxid of the lock directory read by the Children call that granted
// the lock; it strictly increases across exclusive grants because the next
// holder's granting read already reflects the previous holder's deletion,
// and zxids survive container re-creation.
//
// etcd (package etcdlock): the lease is an etcd lease kept alive by baton's
// own loop of one-shot keepalives (not clientv3's KeepAlive, which hides
// send times), so the send time of every keepalive is known. The holder is
// told Suspended when a keepalive answer is late and Lost before the lease
// can have expired on the server (deadline from the send time of the last
// answered keepalive on the monotonic clock, minus a drift margin). The
// token is the create revision of the holder's key.
//
// Redis, Redlock and SQL (packages redislock, redlock, sqllock): the lease
// is a key or row with an expiry on the server, renewed at TTL/3 by one
// keeper per client (package keeper). The holder is told Suspended when no
// renewal sent in the last TTL/2 was confirmed, and Lost before the server
// can expire the lease (from the send time of the last confirmed renewal,
// minus a drift margin) or at once when a renewal finds the lease gone. The
// token is a counter on the server (a per-slot counter, a database
// sequence; Redlock's quorum token). Redlock's grant rests on a majority of
// independent servers and on their clocks: a node that expires a key early
// can let a second client in while the first still holds; the second's
// quorum token is then larger, so fencing still rejects the first holder's
// late writes (a node restarted without persistence breaks even that; see
// package redlock).
//
// None of these guarantees survives a host that suspends (a VM or laptop
// sleep): Go's monotonic clock stops, so "Lost before the server expires"
// cannot hold across it. Fencing does: a resource that checks tokens
// rejects the late writer regardless of clocks.
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
// Every engine issues tokens by one rule: a grant's token is the engine's
// raw counter plus the deployment's token floor (the TokenFloor option of
// each engine; zero by default). The raw counter is what the engine
// itself orders grants by: ZooKeeper's Pzxid, etcd's create revision, a
// Redis counter, a database sequence. FloorToken computes the sum.
//
// The floor exists to re-base a counter that went back or moved: after an
// engine is rebuilt from scratch (a new ZooKeeper ensemble, a new etcd
// cluster, a Redis counter lost in a failover) or a lock moves to another
// engine, raw tokens restart below values the resources have already
// seen, and every write would be rejected as stale. The recovery
// procedure: read the highest token the resources store (fence.Table.Max)
// and configure every client of the deployment with a floor above it.
//
// Every client of a name must use the same floor. Tokens of clients with
// different floors are not comparable: a client with a lower floor is
// granted tokens the resources reject, and one with a higher floor makes
// the others' tokens stale.
//
// A floor whose sum with the raw counter would pass math.MaxUint64 is
// refused: the acquire fails with an error wrapping ErrInvalidOption
// rather than grant a token that wrapped around. (SQL fences store at most
// fence.MaxToken, 2^63-1, so keep floors well below that.)
package baton
