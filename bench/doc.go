// Package bench measures baton beside its peers on the same servers, in
// the same run, and reports ratios rather than absolute times: absolute
// figures depend on the machine, ratios between implementations that make
// the same round trips to the same server do not.
//
// It is a separate module so that the peers it measures (go-zookeeper's
// zk.Lock, etcd's concurrency.Mutex, bsm/redislock, go-redsync) and the
// SQL drivers never enter the library's go.mod.
//
// The measurements in its tests:
//
//   - Uncontended lock+unlock on one name, as testing.Benchmark pairs:
//     baton against the bare round-trip floor of the engine (ZooKeeper:
//     create EPHEMERAL_SEQUENTIAL + getChildren + delete; etcd: one
//     put-if-absent transaction that also reads the first key, + delete)
//     and against the engine's usual Go lock (zk.Lock, concurrency.Mutex).
//
//   - Handoff under contention: N waiters queued on one name, each on its
//     own session, and a holder that releases over and over (the released
//     contender queues again at the back, so the queue stays N long). It
//     reports the p50 latency from the start of Release to the return of
//     the next waiter's Lock, and the server requests per handoff. A
//     herd-free recipe wakes one waiter per release, so both figures must
//     stay flat from 5 to 500 waiters.
//
//   - Recipes, uncontended acquire+release: the RW lock's read and write
//     sides and the semaphore, each beside the bare round trips its
//     protocol needs (neither engine's usual Go client has these recipes,
//     so there is no peer). ZooKeeper: RW = create "__READ__"/"__WRIT__" +
//     getChildren + delete; semaphore = Curator's V2 protocol, guard
//     create + getChildren, lease create + getChildren, guard delete, lease
//     delete. etcd: RW = one put-if-absent transaction counting the queue
//     (baton reads the queue itself only when it is contended) + delete; semaphore = the same V2 protocol (two transactions, two
//     deletes), and, for comparison, a guard-free "first N by create
//     revision" semaphore (one transaction + delete).
//
//   - Leader handoff: the time from the start of Resign to the next
//     candidate's Campaign returning, and from a kill of the leader to the
//     same. A kill is SIGKILL as the network sees it: the leader's fault
//     proxy drops its connection and refuses new ones, so the server keeps
//     the session or lease until it expires; the handoff is then bounded by
//     the session timeout or TTL T (2s, stated in the report), and the old
//     leader must see its leadership end before the next one leads.
//     etcd's concurrency.Election is measured beside baton as a reference.
//
//   - SQL (PostgreSQL, MariaDB, SQLite): sqllock's mutex lock+unlock
//     beside the floor of two conditional UPDATEs on a row of the same
//     table (take it if free by the database clock, clear it if still
//     ours), and beside the database's own session lock on a pinned
//     connection (pg_try_advisory_lock, GET_LOCK; no lease, no token).
//     Fenced writes: one transaction updating one business row, plain
//     (BEGIN; UPDATE; COMMIT), through fence.Table.Write and through
//     fence.Row.Update, each fence beside its unfenced twin (Unfenced,
//     UnfencedRow) so the cost of the rule itself shows apart from the
//     cost of the scheme's statements.
//
//   - Redis: redislock's mutex lock+unlock beside bsm/redislock
//     (Obtain + Release) and the floor of two PINGs; and 10 000 leases held
//     by one client: the goroutines it adds (the same as with one lease),
//     the round trips and process CPU per renewal period, the time to
//     acquire them and for Close to release them.
//
//   - Redlock: redlock's mutex on five nodes beside go-redsync (one try)
//     and the floor of two rounds of PING to every node.
//
//   - Kubernetes (kube-apiserver): kubelock's Mutex lock+unlock beside
//     the floor (a Get and a conditional Update to acquire, a Get and a
//     conditional Update to release, the protocol kubelock and client-go
//     both follow) and client-go's LeaderElector used as a lock (a new one
//     per op on a LeaseLock, ReleaseOnCancel: Run until it leads, then
//     cancel and wait for Run's return), each on a Lease of its own
//     through one clientset; requests are HTTP requests counted by a
//     RoundTripper on the rest.Config (by verb, a watch apart). Leader
//     handoff after a release: from the start of Resign (client-go: the
//     cancel, until Run returned with the Lease released) to the next
//     candidate leading, kubelock's Election beside client-go's
//     LeaderElector at the same lease duration (2s) with client-go's usual
//     15s/10s/2s scaled to it (RenewDeadline 2/3, RetryPeriod 2/15 of it),
//     with both candidates' requests and the process's allocations per
//     handoff. Reported without a target.
//
//   - Observer: redislock's uncontended mutex lock+unlock with
//     Options.Observer nil, batonslog at its default level writing to
//     io.Discard, and a batonprom Collector on a fresh registry, in
//     interleaved rounds: µs/op and allocs/op (the process's mallocs over
//     the timed loop) for each, slog/nil and prom/nil as medians of
//     per-round ratios (target ≤ 1.10×). The nil row must allocate what
//     the Redis row's own pair, built with no Observer, allocates.
//
//   - Cost curves, on every engine (ZooKeeper, etcd, Redis, Redlock,
//     PostgreSQL, MariaDB, SQLite): handoff p50/p99 and requests per
//     handoff at 5, 50, 500 and 2 000 waiters (BATON_BENCH_MAX_WAITERS),
//     each waiter on a client of its own, etcd's concurrency.Mutex beside
//     them; throughput of 32 clients over 1, 10, 100 and 1 000 names
//     beside the floor's on as many clients; 10 000 leases held by one
//     client (BATON_BENCH_HELD): goroutines, live heap per lease, requests
//     per second at rest, the time to acquire and to release them all.
//     Targets: requests per handoff flat (≤ 1.1× from the fewest waiters
//     to the most), p50 at the most ≤ 1.5× at the fewest, goroutines
//     independent of the leases held, throughput over the most names
//     ≥ 0.9× the floor's. The curves count requests exactly on the
//     client's side: ZooKeeper request frames by opcode through a proxy
//     (pings told apart by opcode), etcd calls (keepalives left out), and
//     request flights through turnProxy for the others (for Redis and
//     Redlock without the flights that are only the PING of go-redis's
//     pub/sub health check, one per client's subscription per TTL: with
//     a client per waiter they grew with the waiters, as ZooKeeper's
//     pings would). After each point's handoffs, a window of the same
//     length with the holder holding counts the waiters' requests at rest
//     (Redis, Redlock and SQL waiters poll and keep their intents alive,
//     each at least once per TTL/2), printed beside the curve. Each
//     throughput point also reads the host's CPU (/proc/stat, clients and
//     servers together): on a host kept busy, throughput over the floor's
//     is about the floor's CPU per op over the point's, which the table
//     prints next to it.
//
// A full run (every section) regenerates README.md, the whole file, from
// its own tables, and draws its charts into results/ with gonum/plot:
// handoff latency against waiters, uncontended time beside floor and
// peer, throughput against names.
//
// TestRequestGuard, part of the smoke, fails when an engine's uncontended
// lock+unlock sends more requests than its protocol needs, counted
// exactly on the client's side (see requestGuards for each number and
// why). TestAllocGuard, beside it, fails when baton's uncontended
// lock+unlock allocates more than its ceiling (allocGuards); it runs
// without -race, which turns sync.Pool off, so scripts/test.sh runs it
// once more without the race detector.
//
// Round trips are counted for SQL, Redis and Redlock by a TCP proxy in
// front of the server (turnProxy): every burst the client sends after a
// reply is one request flight, so a pipeline is one and a transaction of
// four statements is four, whatever the server is. Only counted twins of
// the measured pairs go through it; the timed pairs connect directly.
// The count covers every connection of the client (a pub/sub connection
// included), minus an idle window of the same length.
//
// Allocations stand beside the times of the uncontended pairs (recipes
// and observer included), the handoffs, the throughput curve and the held
// leases (not beside the leader handoffs, bounded by session timeouts and
// kills): the client process's heap allocations (runtime.MemStats:
// Mallocs, and TotalAlloc for the bytes in the notes) over the same
// operations that are timed, in the same run. The counters are read once
// before and once after a measured run, never per operation, so that
// reading them (it stops the world for a moment) does not change the time
// measured. Uncontended pairs: testing.Benchmark's own count over its
// timed loop, the median over rounds in the column "allocs/op b·f·p"
// (baton·floor·peer; SQL b·f·n with the native lock; fenced writes
// p·t·tu·r·ru; recipes baton·floor), the range over rounds and B/op in
// the notes. Handoff ("allocs/handoff", "allocs @n"): the allocations of
// the handoff loop (from the first Release to the last re-queue) divided
// by the handoffs, so every contender's Lock, the Release and the
// re-queue are in it; work that grows with the queue (a herd, or reading
// every waiter's entry) shows as allocations that grow with the waiters,
// and the pings of more sessions add a little. Throughput: allocations
// per lock+unlock over the run at the most names (a client's first Mutex
// on a name included), and the floor's. Held leases ("allocs/lease
// acq·rel"): per lease while acquiring them all and while releasing them
// all (the Redis detail also per renewal period). The counts are the
// whole process's: the clients' pings, keepalives and renewals, and
// SQLite's own work (it runs in-process), are in them, for every
// implementation of a row alike; the servers' allocations are not.
//
// CPU time stands in the notes of the uncontended pairs, beside their
// allocations: the client process's (getrusage: user and system time, every
// goroutine, over the same timed loop) per op, and for Redis and Redlock
// the servers' (INFO cpu: used_cpu_user + used_cpu_sys, summed over the
// nodes, read before and after the loop) per op, medians over rounds. With
// the round trips equal, they tell whether a gap is the client's work or
// the server's. Both count every client of the process or the server, so
// they are for a server nobody else uses during the run.
//
// After the timed rounds, each Redis and Redlock pair runs alone once more
// between CONFIG RESETSTAT and INFO commandstats, and its note says which
// commands the servers ran per op and the microseconds each took: a
// script's line includes the commands it called, and "lua" is the rest of
// the script's time. That is where a gap in server CPU comes from.
//
// Server requests are counted on the server for ZooKeeper (mntr's
// zk_packets_received, minus the pings measured over an idle window of the
// same length with the same sessions) and on the client for etcd (a gRPC
// interceptor counts unary calls and stream messages, leaving out lease
// keepalives, etcd's analogue of pings).
//
// By default the tests only run a quick smoke that every measured
// operation really locks and unlocks. The ratio report is built with the
// bench tag:
//
//	eval "$(../scripts/servers.sh start)"
//	go test -tags bench -run TestRatios -v
//
// mntr counts every client of the ZooKeeper server: run the report on a
// server nobody else uses at the time (BATON_BENCH_ZK overrides
// BATON_TEST_ZK; BATON_BENCH_REDIS and BATON_BENCH_REDLOCK override the
// Redis server and the Redlock nodes).
//
// The smoke (without the bench tag) also checks the new rigs: every SQL pair
// locks and unlocks, every fenced write lands and a stale one is refused
// by the fences and lands through their unfenced twins (the negative
// control); the Redis and Redlock pairs lock on the server(s), the counted
// twins send the commands and round trips their protocol needs, and a
// Redis client holding 300 leases renews them with the goroutines of one
// lease and releases them all on Close; every Kubernetes pair leaves its
// Lease held after lock and free after unlock, and each Kubernetes
// election hands leadership over twice, with a larger epoch each time.
package bench
