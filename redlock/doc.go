// Package redlock is baton's Redlock engine: a mutex held on a majority of
// N independent redis-servers (antirez's Redlock), kept alive by package
// keeper, whose grants carry a quorum fencing token — the token Martin
// Kleppmann observed Redlock lacks.
//
// It takes the caller's go-redis clients, one per server, in the same
// order in every client of a deployment:
//
//	nodes := []redis.UniversalClient{
//		redis.NewClient(&redis.Options{Addr: "10.0.0.1:6379"}),
//		redis.NewClient(&redis.Options{Addr: "10.0.0.2:6379"}),
//		redis.NewClient(&redis.Options{Addr: "10.0.0.3:6379"}),
//	}
//	c, err := redlock.New(nodes, redlock.Options{TTL: 10 * time.Second})
//	m, err := c.Mutex("orders/42")
//	lease, err := m.Lock(ctx)
//	defer lease.Release(context.Background())
//	// pass lease.Token() to the resource (package fence)
//
// New returns the *baton.Client every engine gives. Redlock has only the
// mutex (reentrant through the lease's context, as everywhere in baton):
// the client's RWMutex, Semaphore and Election fail with an error wrapping
// baton.ErrInvalidOption. What only Redlock has is reached through
// baton.As, on the engine's own *Client: Verify (read the nodes' indexes
// now) and Stats (attempts, node requests, write-backs, wiped nodes):
//
//	if rc, ok := baton.As[*redlock.Client](c); ok {
//		err = rc.Verify(ctx)
//	}
//
// Its acquire loop is package leasekit's, shared by every lease engine,
// over the attempt below. The nodes are plain, independent servers: not a
// Cluster, not replicas of each other, not behind Sentinel.
//
// # Acquire
//
// One attempt, bounded as a whole by 0.8·TTL (past it the validity left
// would be too small to be worth a grant):
//
//  1. The acquire script goes to every node at once, each request bounded
//     by NodeTimeout (≪ TTL). On node i it checks the node's index, and if
//     the lock key is absent creates it (owner, PX TTL) and mints node i's
//     next token: the smallest value above the node's counter that is
//     ≡ i (mod N). One counter per node, whatever the number of lock
//     names. The round stops as soon as a majority granted, or as soon as
//     a majority has become impossible (enough nodes held by others or
//     failed), without waiting for slow nodes.
//  2. The token is the largest the granting majority minted.
//  3. Write-back, only when needed: a majority of the nodes must mint
//     above the token T from now on. A granting node that minted v > T − N
//     does already (its next mint is at least v + N), the minter included;
//     in the steady state every node is one, and nothing is sent. When
//     fewer than a majority are, the lagging granting nodes' counters are
//     raised to at least T (staying ≡ i mod N), only where this attempt's
//     key is still present (owner-checked, in the same script). Still
//     short of a majority: the attempt fails.
//  4. Validity = TTL − elapsed − drift, computed after the write-back on
//     Go's monotonic clock from the first request's send time; drift =
//     TTL·DriftFactor + 2ms. Not positive: the attempt fails.
//
// A failed attempt unlocks every node it may have reached (owner-checked
// DEL) before it returns, so a split vote frees the nodes at once; what
// it cannot confirm is retried by the keeper in the background until the
// key must have expired. An expired lock is never re-taken silently:
// every attempt has a fresh owner, and extension is owner-checked.
//
// The lease is then held by the keeper: every TTL/3 it extends all of the
// client's leases on all nodes (a PEXPIRE that never re-creates an expired
// key, owner-checked, one script per node per batch) and counts a lease
// renewed only when a majority extended it. A round waits for the nodes'
// answers as long as the keeper still takes them (up to the lease's
// deadline), not only the TTL/3 between rounds: a late answer still says
// that the node extended the key when it ran the script, and a request on
// a new connection through a slow link takes three flights. It declares
// the lease Suspended when no renewal was confirmed for TTL/2, and Lost at
// send time + TTL − (DriftMargin + drift) — before any node can expire a
// majority of the keys. Release deletes the key on every node
// (owner-checked) and succeeds once a majority confirmed. A node that had
// not answered when the round stopped may still grant a moment later, so
// a release first waits until the grant's acquire requests have answered
// (at most NodeTimeout from the attempt's start; see late.go): sent
// sooner, on another connection, it could reach the node first and leave
// the released grant's key there for a whole TTL.
//
// # Waiting
//
// A waiter records its intent on the nodes and learns how many wait; each
// node's release picks the first waiter by arrival, and the
// node that waiter's client listens on (one pub/sub connection per
// client) wakes it, so a handoff costs the same few requests whatever the
// number of waiters. Wake-ups are hints: waiters also poll, spaced by
// their number so that together they poll about once per Backoff.Max/2.
// The details and what a lost wake-up costs are in wakeone.go.
//
// go-redis v9 ignores a context's deadline on a blocked socket read
// unless the client was built with ContextTimeoutEnabled. Every node
// request therefore runs on a goroutine of its own, owned by the Client, and
// each round collects answers only until its deadline; a request left
// behind ends at the node client's ReadTimeout, and Close waits for it.
//
// # Node indexes
//
// Each node stores its index i under <prefix>index. The first client to
// use a node sets it (SET NX) in the order of its list; every client reads
// all indexes at its first use (or Verify) and refuses to run — an error
// wrapping baton.ErrInvalidOption and ErrNodeIndex — unless node i stores
// i. The acquire script checks the index again on every attempt. A node a
// client had verified that later answers without an index was flushed or
// restarted without persistence: the client refuses it (ErrNodeWiped,
// Stats.WipedNodes) rather than trust its rewound counter. A client that
// never saw the node before cannot tell a wiped node from a new one, and
// sets the index again; that is the violation the assumptions below
// exclude.
//
// # Why the token increases
//
// Claim: if grant G returned with token T, every grant G' whose acquire
// began after G returned has a token T' > T; and no two grants share a
// token.
//
// When G returned, a majority W of the nodes had a counter c_k with
// c_k + N > T, each set while G's key was present on it: a node that
// minted v > T − N by the acquire script that created G's key there (its
// counter is v), a lagging node by G's write-back (the raise, to ≥ T).
// G' needs a majority M' of its own; M' and W share a node k. G' created
// its key on k after G returned, so after the mint or the raise on k; and
// since G's key was present then, G' could create its key only after G's
// key left k (released or expired). Node k's counter only grows, and a
// mint is the next value ≡ k (mod N) above it: at least c_k + N when
// c_k ≡ k, and above c_k ≥ T after a raise. Either way G' got a value
// > T from k, and T' — the largest of its majority's values — is > T.
// Without the write-back the argument breaks: the node in common may be
// one whose own counter was far below T (T came from another node), and
// G' can get a smaller token; this package's tests build that state as
// the control.
//
// Tokens never collide: a token ≡ i (mod N) can only have been minted by
// node i, whose counter only grows, so node i never mints the same value
// twice.
//
// The claim is about grants that follow each other in real time; it says
// nothing about two grants that overlap. Redlock can still grant the same
// lock twice at once: a node whose clock jumps forward (or whose key is
// expired early: TestRow07EarlyExpiry) frees its vote while the holder still
// counts on it, and a process paused past its validity still believes it
// holds the lock (Kleppmann's GC-pause timeline). The token is what saves
// the resource in both cases: the later grant has the larger token, and a
// fenced resource (package fence) rejects the earlier holder's writes
// once it has seen the later one's.
//
// # Assumptions
//
// The proof needs every node's counter and index never to be lost or
// rewound:
//
//   - persistence with fsync on every write (appendonly yes, appendfsync
//     always) — a node restarted from an older or empty data set can
//     re-grant a key its peers still count and mint tokens below ones
//     already issued (the tests show it with a node restarted without
//     persistence);
//   - maxmemory-policy noeviction or a volatile-* policy (the counter and
//     index have no TTL, so volatile policies never evict them);
//   - no FLUSHDB/FLUSHALL and no manual edits of <prefix>index or
//     <prefix>counter;
//   - no replica promotion: a replica lags its primary, so its counter is
//     behind.
//
// Clock assumptions are Redlock's own: the nodes' clocks advance at about
// the rate of this host's (DriftFactor), and this process is not paused
// for longer than its margins; the keeper's deadlines and the validity
// check cannot hold across a suspended host (Go's monotonic clock stops).
// The fencing token does.
//
// # Recovery
//
// When a node's data is lost anyway, stop the clients, restore the node
// (or replace it with an empty server), and give every client a TokenFloor
// above every token the resources have seen: new tokens then still exceed
// them (baton's token-floor procedure). A counter that is not a number
// in 0…2^53-N (written by hand, or grown so far that the scripts' Lua
// numbers would lose increments) makes its node refuse to mint
// (ErrBadCounter); the same procedure repairs it: reset the counter, raise
// TokenFloor.
//
// # Opening by URL
//
// Imported (import _ "github.com/baton-go/baton/redlock"), the package
// serves baton.Open for
// redlock://[user:pass@]h1:p1,h2:p2,h3:p3[/db][?tls=true&prefix=…], the
// CLI's --backend URL: at least three distinct nodes, in the same order
// in every client; credentials from the URL, else from
// BATON_REDIS_USERNAME and BATON_REDIS_PASSWORD, the same for every node;
// with tls=true the CA file in BATON_REDIS_CACERT and a client pair in
// BATON_REDIS_CERT and BATON_REDIS_KEY. Open reads the nodes' indexes
// until a majority answered, writing nothing (the first acquire sets a
// missing one), and refuses nodes listed in another order than the
// deployment's first client listed them (ErrNodeIndex). Its
// *baton.Client has the mutex only: RWMutex, Semaphore and Election fail
// with baton.ErrInvalidOption.
//
// # Keys
//
// With the default Prefix "baton:redlock:", on every node:
//
//	baton:redlock:index        the node's index (string)
//	baton:redlock:counter      the node's token counter (string)
//	baton:redlock:lock:<name>  hash {owner, token (this node's mint), grant (the quorum token), proc}, PX TTL
//	baton:redlock:waiters:<name>  zset waiter → arrival ms (wakeone.go)
//	baton:redlock:intents:<name>  zset waiter → expiry ms
//
// proc is the grant's holder record (Options.Process: host, pid, program,
// labels), written with the key by the acquire script, so it lives and
// dies with the key. Clients with different prefixes are independent
// deployments on the same servers. The client's Inspect (and `baton
// inspect` on a redlock:// URL) reads every node and shows the owner a
// majority holds with its token, its time left and holder record, owners
// on fewer nodes (an attempt that failed, a lock expiring), and the
// waiters.
package redlock
