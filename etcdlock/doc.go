// Package etcdlock is baton's etcd engine: the queue recipes of package
// queuekit on etcd leases. Importing it makes baton.Open serve etcd:// and
// etcds:// URLs:
//
//	c, err := baton.Open(ctx, "etcds://h1:2379,h2:2379,h3:2379")
//	m, _ := c.Mutex("jobs/nightly")
//	l, err := m.Lock(ctx)
//	… write to the resource with l.Token(), stop when l.Context() ends …
//	l.Release(ctx)
//
// The port defaults to 2379; the URL has no path or query. The user and
// password come from the URL (etcds://user:password@h:2379) or else from
// BATON_ETCD_USER and BATON_ETCD_PASSWORD, and an etcds:// client's TLS
// files from BATON_ETCD_CACERT, BATON_ETCD_CERT and BATON_ETCD_KEY (see
// baton.WithGetenv). Open returns once the cluster answered a
// linearizable read: an unreachable cluster or one without quorum is
// baton.ErrUnavailable, a refused login or certificate baton.ErrAuth.
// With a *clientv3.Client of your own, New gives the same *baton.Client:
//
//	cli, _ := clientv3.New(clientv3.Config{Endpoints: eps})
//	c, _ := etcdlock.New(cli, etcdlock.Options{TTL: 10 * time.Second})
//	defer c.Close()
//
// What only etcd has is reached through baton.As: the engine's own
// *Client (Etcd, TTL, GrantedTTL, and the raw keys of Entries, Inspect and
// Remove), and the recipes' own methods, such as a semaphore's
// OnDisagreement:
//
//	lc, ok := baton.As[*etcdlock.Client](c)
//	s, _ := c.Semaphore("exports", 2)
//	d, ok := baton.As[interface{ OnDisagreement(func(queuekit.Disagreement)) }](s)
//
// # Layout: compatible with etcdctl lock
//
// A mutex called name keeps one key per contender, "<name>/<lease ID in
// hex>", attached to the contender's lease; the queue is ordered by create
// revision. That is exactly what `etcdctl lock <name>` and
// concurrency.Mutex write, so baton, etcdctl and concurrency.Mutex
// exclude each other on the same name. They write the empty value and
// read none; baton's key holds its holder record (below). (baton
// normalises names by dropping leading and trailing "/", so use the name
// without a leading "/" with the other tools.) Keys under the prefix that are not direct "<name>/<hex>"
// children are ignored, so lock "a/b" does not disturb lock "a", and so
// are keys without a lease, which no contender writes (a user's
// `etcdctl put <name>/1234abcd` beside the lock): baton never waits for
// them nor removes them, and `baton inspect` shows them as foreign.
// etcdctl lock and concurrency.Mutex do wait behind such a key.
//
// # Read/write lock, semaphore and leader election
//
// The other recipes of package queuekit use the same keys and order:
//
//   - RWMutex: "<name>/<lease hex>" with the value "__READ__" or
//     "__WRIT__" (then the holder record). A writer holds when its key is first; a reader when no
//     other kind of key is before it, so an `etcdctl lock` on the same name
//     counts as a writer. A reader never overtakes a queued writer;
//     read→write upgrade fails with baton.ErrUpgradeRefused.
//   - Semaphore: leases "<name>/leases/<lease hex>" with the value
//     "lease-baton:permits=<N>" (then the holder record); a lease holds a permit while it is among
//     the first N by create revision. There is no Curator to interoperate
//     with on etcd, so there is no guard mutex either (ZooKeeper keeps
//     InterProcessSemaphoreV2): an uncontended acquire+release is two
//     requests, the create that counts the leases and the delete.
//     A release wakes one waiter: only the first in line watches the
//     leases before it (one prefix watch, deletions only), every later
//     waiter watches the lease just before its own, and a lease granted
//     that was not among the first N at its create touches its key (a put
//     that keeps value, lease and create revision) to wake the next, now
//     first in line (see queuekit.PermitSession). Older baton releases took the guard
//     "<name>/locks" first; beside them no more than N leases are ever
//     granted (every grant is among the first N, and a lease's place only
//     moves forward), though a waiter behind an older client's waiting
//     lease may wait until that lease is released. A lease taken by a
//     baton client with another N is reported to
//     queuekit.Semaphore.OnDisagreement, each lease once per Semaphore, by
//     a client that must wait and by one granted beside other leases
//     (such a grant reads the keys before its own, serializable at its
//     create's revision: one more request, never on an empty semaphore).
//     No stored N wins: each client admits by its own N, as on the other
//     engines, so with one permit of N=1 held a client with N=1000 gets
//     in, and reports the N=1 lease.
//   - Election: exactly `etcdctl elect <name> <proposal>` and
//     concurrency.Election: "<name>/<lease hex>" whose value is the
//     candidate's ID (baton.DefaultID, "<hostname>:<pid>", or the one given
//     to CampaignAs); the key with the smallest create revision leads, so
//     baton and etcdctl candidates take turns, and `etcdctl elect -l
//     <name>` prints a baton leader's ID. The epoch is the leader key's
//     create revision. The value being the proposal those tools read as
//     the leader's, a candidate's key has no holder record: its ID names
//     the process.
//
// # Holder record
//
// Every grant stores who holds it in its key's value, in the create
// transaction itself (no request more): this client's Options.Process
// (host, pid, program, labels), encoded once per client by
// engine.ProcessData as a short URL query, "host=web-1&pid=4242&prog=job".
// A mutex key's value is the record alone; a read/write lock's and a
// semaphore lease's is what it held before, a space, then the record
// ("__READ__ host=web-1&pid=4242&prog=job", "lease-baton:permits=3
// host=…"): the record holds no space, and everything before the space
// reads as it always did. Inspect and the baton.Client's Inspect show it
// as each entry's Process. Keys without a record (etcdctl's, an older
// baton's) read as before, with no Process. An older baton reads a
// reader's or writer's key with a record as another tool's key, which it
// counts as a writer: its readers wait behind this release's readers
// instead of sharing with them, and exclusion holds. It reads a recorded
// lease's N as not stored, and so reports no disagreement of N for it.
//
// Tokens are create revisions: a writer's exceeds every earlier grant's,
// since every key before it was created earlier; readers and permit
// holders hold different keys and so different tokens, but tokens only
// order exclusive grants.
//
// Because the key is named after the lease, two entries of one directory
// can never share a lease: the Client keeps a small pool of leases and hands
// each acquire one that has no entry in that directory (or grants a new
// one). Reusing an idle lease makes an uncontended lock+unlock two round
// trips, like concurrency.Mutex on a reused session: one transaction that
// creates the key and counts the keys beside it (a contended acquire then
// reads the key just before its own), and one delete (a plain
// DeleteRange: see etcd #22082 below). At most MaxIdleSessions idle
// leases are kept, each for IdleSessionTimeout.
//
// # Fencing token
//
// The token is the create revision of the holder's key plus
// Options.TokenFloor (the token floor rule of package baton: a sum past
// 2^64 fails the acquire). The mutex grants the key with the smallest create
// revision, and keys created later always get larger revisions, so tokens
// strictly increase across grants of one name. This is the fix Jepsen
// recommended after etcd 3.4.3's lock lost updates.
//
// # Lease states and their timing
//
// Each lease is kept alive by baton's own loop of one-shot keepalives, one
// every TTL/3, not by clientv3's KeepAlive: KeepAlive hides when each
// keepalive was sent, and the deadline must be measured from the send time.
// (clientv3's KeepAliveOnce is not used either: it re-sends at once on every
// Unavailable error, a hot loop while the cluster has no leader.) The server
// restarts a lease's TTL when it processes a keepalive, which is after we
// sent it, so the lease cannot expire on the server before
// sendTime(last answered keepalive) + TTL. On the monotonic clock:
//
//   - Suspended: no keepalive sent within the last TTL/2 has been answered
//     (an answer is about TTL/6 late), or a keepalive failed. Side effects
//     must pause. The next answered keepalive returns the lease to Held.
//   - Lost: at sendTime(last answered keepalive) + TTL − margin, with margin
//     = max(TTL/10, 100ms) for clock-rate drift and scheduling, i.e. before
//     the server can expire the lease and before any other client can be
//     granted the lock; or at once when the server answers that the lease
//     is gone (revoked or expired). A lost lease is revoked (best effort)
//     and never reused; its held locks become Lost, their contexts are
//     cancelled with a cause wrapping baton.ErrLost, and its waiters fail
//     with baton.ErrSessionLost.
//
// One member that is frozen or cut off must not cost a lease while the
// others answer: a keepalive still unanswered a third of the way to
// Suspended is hedged by another on a new stream, which the client's round
// robin puts on the next member, and so on up to three in flight (the
// first answer wins); and a release's delete bounds each attempt (TTL/4,
// at least 250 ms) and retries on another member; the delete is exact, so
// a retry never removes a newer entry.
// A wait is not hedged: clientv3 carries all of a client's watches on one
// stream, and while that stream's member is frozen (its connection still
// open) a waiter hears of its turn only once the member answers again, or
// once gRPC's own keepalive (clientv3.Config.DialKeepAliveTime, at least
// the server's --grpc-keepalive-min-time) drops the connection and the
// watch moves to another member. The grant is late, never lost or doubled.
//
// The etcd lessor checks for expired leases on a 500 ms tick, so the server
// removes a lease's keys up to half a second after its TTL ran out: a dead
// holder's lock is free after TTL … TTL + 0.5 s.
//
// Neither guarantee survives a paused host (a VM or laptop sleep stops the
// monotonic clock). Fencing does.
//
// # Handoff
//
// A waiter watches only the key directly before its own, so a release
// wakes one waiter. The woken waiter of concurrency.Mutex then reads the
// newest key before its own, and etcd answers that range (sorted by
// create revision, limit 1) by reading and sorting every key of the
// queue: at 2 000 waiters, each handoff read 2 000 keys from bbolt. baton
// skips it when it can: a holder granted as the first of its queue, with
// keys behind it, releases with its guarded delete plus a put of its grant
// ID at "<name>\x00released", on its own lease (a lock name has no control
// characters, so that key is no lock's entry, and it lies outside the
// "<name>/" prefix that etcdctl lock and concurrency.Mutex read). Nothing
// gets an earlier create revision than an existing key, so the waiter
// directly behind a first holder is first once it is gone: the woken
// waiter sends one transaction comparing that key with the ID of the key
// it waited for and its own key's create revision, and holds if both
// match. Otherwise (the key before it was a waiter that gave up, an
// expired lease, an etcdctl holder) it reads the range as before.
//
// # TTL: rounding and clamping
//
// etcd TTLs are whole seconds; Options.TTL is rounded up. etcd raises a TTL
// below its minimum (about 2 s with default server timing: 1.5 × the
// election timeout) without an error; the loop uses the granted TTL, and
// Client.GrantedTTL (through baton.As) reports it so callers can tell the user (the CLI does).
//
// # Traps worked around
//
//   - etcd #11456 (a lock granted after its lease expired): every wake-up
//     checks the own key (the compare of the handoff below, or a re-read
//     of the queue: its own key and the newest key before it, one range
//     capped at its create revision, limit 2); a read where the own key is
//     missing (its lease is gone) fails the acquire with
//     baton.ErrSessionLost, and a lease baton already considers Lost never
//     grants, even while the server still shows its key.
//   - etcd #22082 (a retried Unlock deletes a newer lock of the same lease):
//     a release's first delete is a plain DeleteRange, which etcd applies
//     for less than a transaction, and can meet no newer entry: the pool
//     gives a lease one entry per directory at a time, and a delete whose
//     outcome stays unknown (it may still be applied later) retires the
//     lease from the pool. Every other delete of an entry deletes its key
//     only if the key's create revision is still the entry's, so a stale
//     retry is a no-op.
//   - KeepAlive hiding send times: see above; every deadline is measured
//     from a send time baton recorded itself.
//   - etcd #19597 (a waiter keeps waiting after its session expired): a
//     waiter watches its own key as well as its predecessor's, so a revoked
//     or expired lease ends the wait at once with baton.ErrSessionLost; the
//     keepalive loop catches the rest.
//   - etcd #9715 (compaction strands waiters): a compacted watch only wakes
//     the waiter, who re-reads and watches again from a fresh revision.
//   - CURATOR-527 (a predecessor deleted between the read and the watch):
//     the watch starts at the read's revision + 1, so the deletion is
//     delivered at once.
//   - A create whose result is unknown (the response was lost) is resolved
//     by reading the deterministic key back; if that is impossible, the
//     lease is never used for a new entry again, the key is deleted in the
//     background, and the lease is revoked once its other entries are done.
//   - An acquire that is cancelled returns at once (clientv3 honours
//     contexts natively); its key is deleted by the lease's background
//     cleanup, or disappears with the lease.
package etcdlock
