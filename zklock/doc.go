// Package zklock is baton's ZooKeeper engine: the queue recipes of package
// queuekit on one ZooKeeper session at a time, built on
// github.com/go-zookeeper/zk v1.0.4.
// Its locks are wire-compatible with Apache Curator 5.x, so Go and Java
// services can share them.
//
//	c, err := zklock.Dial(ctx, []string{"zk1:2181", "zk2:2181"}, zklock.Options{Chroot: "/app"})
//	m, err := c.Mutex("orders/42") // c is a *baton.Client
//	lease, err := m.Lock(ctx)
//	// pass lease.Token() to the resource with every write
//
// Importing the package also makes baton.Open serve zk:// and zk+tls://
// URLs (zk://[user:password@]zk1:2181,zk2:2181/app), the CLI's, with the
// digest user from the URL or BATON_ZK_USER / BATON_ZK_PASSWORD and, for
// zk+tls://, BATON_ZK_CACERT, BATON_ZK_CERT and BATON_ZK_KEY. Both give
// the same *baton.Client.
//
// What only ZooKeeper has is reached through baton.As: the engine's own
// *Client (the session's Conn, SessionID and SessionTimeout, a lock's Dir,
// the raw entries of Entries, Inspect, Remove and TokenBound), and the
// recipes' own methods, such as a semaphore's OnDisagreement:
//
//	zc, ok := baton.As[*zklock.Client](c)
//	s, err := c.Semaphore("exports", 2)
//	d, ok := baton.As[interface{ OnDisagreement(func(queuekit.Disagreement)) }](s)
//
// # Layout (Curator's InterProcessMutex)
//
// A lock called "orders/42" lives in the directory <chroot>/orders/42. Each
// acquire creates one EPHEMERAL_SEQUENTIAL entry
// "_c_<uuid>-lock-<sequence>" (Curator's protected mode; read/write,
// semaphore and latch entries use "__READ__", "__WRIT__", "lease-",
// "latch-": see below). Missing directories are created as container nodes, which the
// server deletes once empty. Entries sort by the sequence after the marker;
// children that are not entries of a known kind are ignored.
//
// Each entry's create also writes who made it, the holder record
// "host=web-1&pid=4242&prog=worker" (Options.Process, this process by
// default), which Inspect reads back: as the whole data of mutex,
// read/write and guard entries, after the N in a lease's. An election
// candidate's data stays its ID alone, since Curator reads all of it.
//
// ZooKeeper's own tree, /zookeeper (quotas, configuration), is refused: a
// name whose directory would be /zookeeper or below it — "zookeeper/quota"
// without a chroot — fails Mutex, RWMutex, Semaphore, Election and Dir
// with an error wrapping baton.ErrInvalidName (under a chroot it is an
// ordinary name), and a chroot there fails Dial and ParseURL with one
// wrapping baton.ErrInvalidOption.
//
// # Read/write lock, semaphore and leader election
//
// The recipes of package queuekit run on the same session and the same
// entries, each with Curator's layout, so a Java service and a Go service
// on the same path share them:
//
//   - RWMutex = InterProcessReadWriteLock: "_c_<uuid>-__READ__<seq>" and
//     "_c_<uuid>-__WRIT__<seq>" in one directory, sorted by the sequence
//     after either marker, so both kinds interleave in creation order. A
//     writer holds when it is first; a reader when no writer is before it
//     (it watches the nearest earlier writer). Any entry that is not a
//     reader counts as a writer, so a foreign entry blocks readers rather
//     than being overlooked. A reader never overtakes a queued writer;
//     read→write upgrade fails with baton.ErrUpgradeRefused.
//   - Semaphore = InterProcessSemaphoreV2: the guard mutex
//     "locks/_c_<uuid>-lock-<seq>" admits one acquirer, which creates
//     "leases/_c_<uuid>-lease-<seq>" and holds a permit while the leases
//     directory has at most N children, watching the whole directory
//     (getChildren with a watch, as Curator does) otherwise; then it
//     releases the guard. baton writes "baton:permits=<N>" as the lease's
//     data, then the holder record on a line of its own (Curator writes
//     the client's address, which baton ignores), and
//     reports a baton lease taken with another N to OnDisagreement: the
//     acquirer that must wait, and the one granted while other leases are
//     held (a client with N=1000 joining a held semaphore of 1). No stored
//     N wins: every client admits by its own N, as Curator's do
//     (queuekit.Semaphore, "N must agree").
//   - Election = LeaderLatch: "_c_<uuid>-latch-<seq>" whose data is the
//     candidate ID (LeaderLatch's participant id). The first entry leads.
//     A candidate only ever counts its own entry of its current session,
//     so it leads only while that entry's ephemeral owner is its live
//     session; once the session is Lost, its leadership is Lost for good
//     (the Curator double-leader bugs CURATOR-620/653/696 came from
//     leading again, or still, on a replaced session).
//
// Tokens: a writer's token (the directory's Pzxid at its granting read)
// exceeds every earlier grant's, because every earlier entry's deletion is
// already in that read; readers and permit holders granted together may
// share a token. A leader's epoch is its token.
//
// # The fencing token
//
// The token of a grant is the lock directory's Pzxid (the zxid of its last
// child change) from the read that granted it (Children, or the handoff's
// Get below), plus
// Options.TokenFloor (the token floor rule of package baton: a sum past
// 2^64 fails the acquire). It costs no extra round trip and strictly increases
// across exclusive grants: the next holder's granting read already reflects
// the previous holder's deletion, which is a later transaction. zxids grow
// across the whole ensemble, so a directory deleted by the container reaper
// and created again still yields larger tokens. Sequence suffixes restart in
// a new directory and are never used as tokens.
//
// # Handoff
//
// A waiter watches only the entry directly before its own, so a release
// wakes one waiter. Curator's waiter then reads every child of the
// directory to see that it is first: in a queue of 2 000 that answer is
// about 100 KB, and decoding it was most of the handoff. baton skips it
// when it can: an entry granted as the first of its directory, with
// entries behind it at the time, is released with a multi that deletes it
// and sets the directory's data to "baton:released=<its name>" (alone, it
// is a plain delete: the uncontended lock costs what Curator's does). Nothing can be created before an existing
// entry, so the waiter directly behind a first holder is first once it is
// gone: the woken waiter reads the directory's data and stat (one small
// getData), and if the data names the entry it waited for, it holds, with
// the Pzxid of that stat as its token. Otherwise (the entry before it was
// a waiter that gave up, a dead session, a Curator holder) it reads the
// children as Curator does. Curator and zk.Lock read no directory data; a
// directory whose ACL refuses the write is released with a plain delete.
//
// # Session states and their timing
//
// A lease lives as long as the session that created its entry. With T the
// session timeout the server negotiated (read off the wire: go-zookeeper
// hides it; Client.SessionTimeout reports it, and the server's
// min/maxSessionTimeout may clamp the requested Options.SessionTimeout):
//
//   - Held: connected with the original session ID.
//   - Suspended: as soon as go-zookeeper reports the connection gone, or
//     when no reply has proven for T/2 that the server hears us (pings go
//     every T/3).
//     Ownership is uncertain; side effects must pause. Suspended comes back
//     to Held when the same session reconnects.
//   - Lost (final): on session expiry, on any change of the session ID
//     (after an expiry go-zookeeper silently starts a new session; the old
//     entries are gone), or when the session could have expired on the
//     server: baton declares Lost once T − T/10 has passed since the last
//     proven contact. The tenth of T covers timer delay and clock-rate drift.
//
// "Proven contact" is measured by watching the session's TCP stream (a
// wrapped net.Conn; nothing is modified): every reply pops the send time of
// the oldest unanswered request, pings included, and the newest popped send
// time is a moment at which the server certainly heard the client. The
// server cannot expire the session before that moment plus T, so Lost comes
// strictly before expiry and before any other client can be granted the
// lock. go-zookeeper's own rule (read timeout 2/3·T since the last byte
// received) is not enough: watch notifications arrive even when none of
// our packets reach the server (a one-way partition), so "last receive"
// can be far later than the server's "last heard". A corollary: a round
// trip longer than about T/2 makes the session unprovable, and it is
// declared Lost even though the server might keep it. A host that suspends
// (VM or laptop sleep) stops the monotonic clock, so "Lost before expiry"
// cannot hold across it; the token does.
//
// When a session is Lost the client closes its connection (the server then
// removes the session's entries at once if it can be reached, else at
// expiry) and dials a new session after a backoff. Leases of the old
// session are Lost, their contexts cancelled with a cause wrapping
// baton.ErrLost; waiters on it fail with baton.ErrSessionLost. A new session
// never adopts the old one's entries.
//
// # Protected create
//
// When a create's result is unknown (the connection broke after the request
// may have reached the server), baton never re-creates blindly. It waits
// until the connection is back on the same session, lists the directory for
// the attempt's "_c_<uuid>-" prefix, checks each match's ephemeral owner
// (one Exists per match, only on this path), adopts the smallest entry of
// its own session and deletes the other duplicates; a node of another
// session is never adopted or touched. With no match it re-creates with the
// same uuid after a backoff. If the session changed meanwhile the acquire
// fails with baton.ErrSessionLost. go-zookeeper's
// CreateProtectedEphemeralSequential is not used (no owner check, first
// match instead of smallest, retries on a new session).
//
// # Contexts, cleanup and goroutines
//
// No go-zookeeper call takes a context. baton runs each call on a goroutine
// owned by the session and lets the caller return when its context ends
// (within milliseconds); the call ends when the server answers or the
// connection fails, and at the latest when the session is closed. An entry
// whose acquire gave up, and a create whose result was unknown when its
// caller left, go to the session's cleaner goroutine, which deletes them as
// soon as the server answers; if the session dies first, the server deletes
// them. Watches use getData (as Curator does) so a vanished predecessor
// leaves no watch behind (CURATOR-527: the waiter re-reads at once).
// go-zookeeper cannot remove a watch, so the waiters of a session share
// one watch per watched entry: a cancelled waiter's goroutine ends at
// once, and the shared watch stays registered until the entry changes or
// the session ends (one per entry, however many waiters gave up on it).
// Every goroutine baton starts belongs to a session or to
// the client, and Close waits for them.
//
// # Other traps worked around
//
//   - go-zookeeper's event channel holds 6 events and drops the rest: baton
//     uses WithEventCallback, whose handler only flips state under a mutex.
//   - go-zookeeper logs to the standard logger; baton silences it.
//   - go-zookeeper has no chroot: baton prefixes every path itself, and
//     every name passes engine.ValidateName, so no path escapes the chroot.
//   - ZooKeeper's sequence counter is a signed 32-bit number per directory;
//     past 2^31 creates in one directory the names turn negative and are not
//     recognised. Container directories restart the counter when reaped.
//
// # Authentication
//
// Options.Auth adds digest credentials to every session before it is used,
// and entries and directories are then created with a digest ACL naming
// those users alone. Options.TLS connects to a server's secureClientPort
// (the Netty connection factory) with baton's own TLS dialer, since
// go-zookeeper has none; a refused certificate fails with baton.ErrAuth
// instead of being retried. ZooKeeper accepts any digest credential at
// AddAuth: a wrong password is refused only where an ACL names the user,
// so give the chroot a persistent node whose ACL is the users' digest.
package zklock
