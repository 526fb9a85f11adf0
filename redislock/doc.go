// Package redislock is baton's Redis engine for a single primary (alone,
// under Sentinel, or a Redis Cluster): leases on keys, minted and expired
// by Lua scripts on the server's clock, kept alive by package keeper,
// through the caller's go-redis client (github.com/redis/go-redis/v9, any
// redis.UniversalClient). New returns the *baton.Client every engine
// gives, with its mutex (reentrant), read/write lock, semaphore and
// election, whose acquire loop is package leasekit's, shared by every
// lease engine; this package supplies the scripts, the key layout and the
// pub/sub wake-ups.
//
//	c, err := redislock.New(rdb, redislock.Options{TTL: 10 * time.Second})
//	m, err := c.Mutex("orders/42")
//	lease, err := m.Lock(ctx)
//
// What only Redis has is reached through baton.As: the client's own
// *Client (Stats, Prefix, TTL), and the lock objects' own methods behind
// a *baton.Mutex, *baton.RWMutex, *baton.Semaphore or *baton.Election —
// Key (the lock's or the leadership's Redis key), LockFor and TryLockFor
// (a fixed lease time, not renewed), OnDisagreement (a semaphore's N
// stored by other clients):
//
//	k, ok := baton.As[interface{ Key() string }](m)
//
// # Opening by URL
//
// Imported (import _ "github.com/baton-go/baton/redislock"), the package
// serves baton.Open for redis://[user:pass@]host:port[/db] and rediss://
// (TLS), the CLI's --backend URLs: credentials from the URL, else from
// BATON_REDIS_USERNAME and BATON_REDIS_PASSWORD; for TLS the CA file in
// BATON_REDIS_CACERT (else the system roots) and a client pair in
// BATON_REDIS_CERT and BATON_REDIS_KEY. The URL takes db= and no other
// parameter: baton sets the connection's timeouts, retries and name, and
// refuses skip_verify. Open proves the connection by a PING, retried until
// the connect timeout; a refusal (credentials, ACL, TLS) fails at once
// with baton.ErrAuth. The client it returns owns its go-redis client;
// New takes one of yours (a Sentinel failover client, a Cluster) and gives
// the same *baton.Client, whose Close leaves your client open.
//
// # Keys
//
// Every key of one lock name carries the escaped name as its hash tag, so
// that it lands in one Cluster slot and one script may touch them all
// (with the default Prefix "baton"):
//
//	baton:{orders/42}:mutex            "<owner> <token> <proc>"   (PX = lease time; " +" appended: somebody waits)
//	baton:{orders/42}:mutex:waiters    zset waiter → expiry ms    (waiting intents)
//	baton:{orders/42}:rw:write         hash owner, token, proc
//	baton:{orders/42}:rw:readers       zset "<owner>:<token>" → expiry ms
//	baton:{orders/42}:rw:procs         zset "<owner>:<token> <proc>" → expiry ms
//	baton:{orders/42}:rw:queue         zset "r:<waiter>"|"w:<waiter>" → expiry ms
//	baton:{orders/42}:rw:order         zset the same → arrival number
//	baton:{orders/42}:rw:seq           the arrival counter
//	baton:{orders/42}:sem:permits      zset "<owner>:<token>" → expiry ms
//	baton:{orders/42}:sem:n            the N the holders use
//	baton:{orders/42}:sem:procs        zset "<owner>:<token> <proc>" → expiry ms
//	baton:{orders/42}:sem:waiters      zset waiter → expiry ms
//	baton:{orders/42}:elect            hash owner, token (epoch), id, proc
//	baton:{orders/42}:elect:waiters    zset candidate → expiry ms
//	baton:{orders/42}:wake             pub/sub channel: releases (a mutex's when it has waiters), election grants
//	baton:wake:<client id>             pub/sub channel: a release waking one of the client's waiters
//	baton:tokens:{5061}                the token counter of the name's slot
//
// A hash tag is the text between the first "{" and the first "}" after it,
// so the name is escaped to contain neither: "%" → "%25", "{" → "%7B",
// "}" → "%7D" (one-to-one, and never empty since a valid name is not).
// Expiry is always judged by the server (PEXPIRE on hashes, TIME-scored
// members in sorted sets); client clocks never enter a key.
//
// proc is the grant's holder record (Options.Process: host, pid,
// program, labels, a short URL query), written by the script that grants,
// renewed and removed with the grant, so that Inspect and baton inspect
// show who holds a lock at no extra round trip.
//
// # Tokens
//
// The fencing token is the value of a counter INCRemented by the acquire
// script, in the same script that grants, so it is strictly greater than
// every earlier grant's of the same name as long as the counter is not
// rewound. Counters must not grow with the number of names (a deployment
// may lock one name per order, order:lock:<id>, millions of them), so
// there is one counter per Cluster hash
// slot — at most 16 384, whatever the names — and the counter key's hash
// tag is a precomputed string that hashes to the lock's slot (computed
// once per process with Cluster's CRC16), so the script may touch it.
// Names in one slot share a counter: their tokens interleave, and each
// name's still increase. On a plain primary the same layout is used, so a
// deployment can move to Cluster (slot by slot) without a token going back.
//
// # Acquire, renew, release
//
// Each is one round trip: an acquire is one script (if the lock is free,
// INCR the slot's counter, write owner and token with the lease time (the
// client adds Options.TokenFloor to the token), remove the caller's waiting
// intent; else record the intent and answer the time until the holder's
// expiry as a hint); a release is one script (owner-checked DEL and
// PUBLISH on the name's channel); the keeper renews every lease of a
// client every TTL/3 in pipelines of Options.BatchSize EVALSHAs, each an
// owner-checked PEXPIRE that never re-creates a key that expired or went
// away (for sorted-set members, only while the member's score is in the
// future). The owner is a random 128-bit value per grant, so a stale or
// retried release never frees a newer grant. Scripts are sent with
// EVALSHA; a NOSCRIPT (a flushed script cache, a failover) loads them and
// retries.
//
// # Deadlines: a go-redis trap
//
// go-redis' ContextTimeoutEnabled is false by default: a context deadline
// then does not cut a socket read that is already blocked, and a call to a
// partitioned server returns only at the client's ReadTimeout (3s by
// default; never, with -1). baton does not rely on the caller's client
// settings: unless the client was built with ContextTimeoutEnabled (then
// go-redis cuts the read itself, and baton calls it directly), every Redis
// call it makes runs in a goroutine owned by the Client and baton returns
// at the context's end. Building the client with ContextTimeoutEnabled is
// recommended: it saves that goroutine and hand-off per call. The abandoned call's
// outcome is unknown, so an abandoned acquire is released in the
// background (owner-checked, by the keeper) instead of blocking others for
// a whole TTL. Close waits for abandoned calls to end (at most TTL+5s).
// Build the redis client with ReadTimeout well below the TTL anyway: a
// renewal pipeline stuck on a dead connection is retried only once the
// read fails. baton retries acquires itself; a client with MaxRetries > 0
// (go-redis' default is 3) may also resend a script whose reply was lost:
// the mutex, writer and leader scripts recognise their own grant and
// answer it again, but a resent reader or permit acquire takes a second
// member, which then blocks others until it expires (one TTL). MaxRetries
// -1 avoids that.
//
// # Waiting
//
// A waiter retries the acquire script with jittered exponential backoff
// (capped at TTL/4, and at the holder's remaining time when the script
// reported it) and is woken at once by a release. Each attempt of a
// waiting acquire refreshes its waiting intent (a sorted-set member
// expiring after one TTL) inside the same script, so inspect shows the
// queue without any extra round trip; a grant removes it, an acquire that
// gives up removes it in the background, and expired intents are trimmed
// by the next script. Each Client keeps one pub/sub connection (started
// at its first wait, one goroutine, stopped by Close) for its wake-ups.
// A waiter that cannot reach the server for a whole TTL fails with
// baton.ErrSessionLost.
//
// A mutex or an election wakes one waiter per release (wakeone.go has the
// details and the trade-offs): the release script removes the oldest live
// intent and publishes that waiter's number on its client's channel,
// subscribed once per client, so a handoff costs the same few requests
// whatever the number of waiters. The lock is not reserved for the woken
// waiter: a free lock admits any caller, so a woken waiter that died or
// missed its message never holds it up, and may in turn find it taken and
// wait again (its intent recorded anew, at the back). Pub/sub is
// best-effort, so waiters still poll, as a safety net only: a refused
// attempt answers the number of waiters n, and the next poll comes no
// sooner than n × Backoff.Max/2 (capped at TTL/2, below the intent's
// expiry), so that the waiters of one lock together poll about once per
// Backoff.Max/2 until the cap. A holder's expiry
// is not published: waiters come at the expiry the script reported.
// During a rolling upgrade, releases by older clients (which publish only
// on the name's channel) reach these waiters by that poll.
//
// The read/write lock and the semaphore wake every waiter of the name: a
// writer's release may admit many readers. Every release publishes on
// the name's channel, which they (and an election's Observe) watch by reference
// count; but a mutex's release, only when its waiters' set is not empty
// (the channel's only watchers of a mutex are its waiters, each of which
// records its intent before it waits): an uncontended release sends no
// PUBLISH. A message lost or published before the SUBSCRIBE landed costs
// one backoff step, never a grant. Options.NoPubSub disables the pub/sub
// connection: that client's waiters then wake by backoff and by its own
// releases only (a release script never picks them), and on a redis.Ring
// (whose SUBSCRIBE goes to the channel name's shard) waiters wake as with
// the read/write lock.
//
// # Replicas and failover
//
// Redis replicates asynchronously. A failover onto a replica that had not
// received a grant forgets it: the promoted server grants the lock again
// while the first holder still believes it holds it (a double grant), and
// its counter is behind, so the new grant's token can equal or be lower
// than the old one. baton cannot prevent this on a single primary. What
// it offers:
//
//   - Fencing still holds at the resource: a token not greater than one
//     already accepted — including an equal token from another owner — is
//     rejected (package fence, fence/redisfence), so the rewound holder's
//     writes are refused (TestFailoverRow6 reproduces the failover).
//   - Options.ReplicaAcks > 0 pipelines WAIT n timeout right behind the
//     acquire script, on the same connection (one round trip); a grant not
//     acknowledged by n replicas is released (owner-checked) and the
//     acquire fails with ErrNotReplicated (and baton.ErrUnavailable). This
//     narrows the window but does not close it: WAIT does not make Redis
//     strongly consistent (an acknowledged write can still be lost if the
//     acknowledging replica is not the one promoted, or both fail), and
//     renewals are not acknowledged. On a ClusterClient or a Ring, WAIT
//     could travel to another node than the one that ran the script, so
//     New refuses ReplicaAcks there with baton.ErrInvalidOption.
//   - Options.TokenFloor re-bases rewound counters: after a failover (or a
//     restore from a backup) set it above the highest token ever handed
//     out (the fenced resource knows it: fence's Current); every token is
//     then the counter's value + TokenFloor, as on every engine.
//
// Keep the counters durable as you keep the fence: appendonly yes, and a
// maxmemory-policy that never evicts keys without a TTL (noeviction or a
// volatile-* policy). An evicted or flushed counter restarts at 0, and
// its tokens at TokenFloor + 1. A counter holding a value outside
// 0…2^53-1 (set by hand, or grown past 2^53, beyond which the scripts'
// Lua numbers lose increments) mints nothing: every acquire of its names
// fails with ErrBadCounter until it is repaired.
//
// None of the lease timing survives a host that suspends (Go's monotonic
// clock stops); fencing tokens do.
package redislock
