// Package memlock is an in-memory lock service for tests: a queue engine
// that keeps its lock directories, entries, token counters and sessions in
// the test's own process, on a clock the test controls.
//
//	fake := clock.NewFake(time.Now())
//	srv := memlock.NewServer(memlock.Options{Clock: fake, SessionTTL: 10 * time.Second})
//	defer srv.Close()
//	a, b := srv.Client("a"), srv.Client("b") // two simulated processes, each a *baton.Client
//	m, _ := a.Mutex("orders/42")
//	l, _ := m.Lock(ctx)
//	fa, _ := baton.As[*memlock.Client](a) // a's fault methods
//	fa.Partition()                        // l is Suspended at once
//	fake.Advance(10 * time.Second)        // the session expires: l is Lost, then b can be granted
//
// Server.Client returns the *baton.Client every engine gives, so the code
// under test takes a *baton.Client and runs unchanged on a real engine.
// The test reaches the simulated process's faults through baton.As, on
// the *memlock.Client behind it.
//
// # What it is for
//
// Unit tests of code that uses baton: a handler that must stop when its
// lease's context ends, a job that must refuse to write with a stale token,
// a leader that must drain on loss. Such a test needs a holder to be paused,
// cut off, expired, and another client to take over, in a fixed order and
// in milliseconds. memlock runs the very recipes the real engines run
// (package queuekit: Mutex, RWMutex, Semaphore, Election) with the full
// contract of package baton, so what a test observes is what the code will
// observe on ZooKeeper or etcd: tokens that strictly increase per name,
// owners, reentrancy, FIFO order, Suspended and Lost before anyone else is
// granted. It also gives baton's own recipe tests a fast engine.
//
// # What it is not
//
// It is not a lock: it coordinates goroutines of one process, which
// sync.Mutex does better. It is not a stand-in for a real server in the
// tests of an engine: an engine is judged by real faults at a real
// transport, and memlock has neither. It passes the conformance suite
// (package batontest) so that its behaviour can be trusted as the
// contract's, not as any one server's timing.
//
// # Sessions and the virtual clock
//
// Each client has one session at a time, shared by all its locks, as a
// ZooKeeper client has. A connected session never expires. A partitioned
// one (Client.Partition) is cut off: its leases are Suspended at once, its
// calls wait, and the server keeps it for Options.SessionTTL on
// Options.Clock. When that passes the server expires it, in this order:
// the session is Lost, every lease on it is told (state Lost, context
// cancelled with a cause wrapping baton.ErrLost), and only then are its
// entries deleted, which is what lets the next waiter in. Client.Heal
// before the TTL brings the session and its leases back to Held; after it,
// the client opens a new session at its next call and its old leases stay
// Lost. Client.Expire ends the session at once in the same order, and
// returns when its entries are gone.
//
// With a *clock.Fake, the TTL passes only when the test advances the
// clock, so a story spanning minutes of lease time runs in milliseconds
// and the same way every time. The expiry itself runs on a goroutine of
// the clock's AfterFunc: after Advance, wait for what the story expects
// (the lease's Done channel, the next holder's Lock) rather than assume it
// already happened.
//
// # Tokens
//
// Each lock directory has a counter that every create and delete of an
// entry moves, as ZooKeeper's Pzxid moves with every child change. A grant's
// token is the counter at the read that granted it plus Options.TokenFloor:
// the next holder's granting read already counts the previous holder's
// deletion, so exclusive grants get strictly increasing tokens. In an
// empty lock the first Lock gets 1; a waiter queued behind it (2) and
// granted after its release (3) gets 3. Server.RewindTokens moves a
// counter back, as a rebuilt engine would, to show a fenced resource
// refusing the repeated tokens, and TokenFloor curing that.
//
// # Faults
//
//   - Client.Partition and Client.Heal: cut a client off and reconnect it
//     (a network partition, or a process too paused to talk).
//   - Client.Expire: the server expires the session now.
//   - Client.LoseResponse(Create): the next entry is created but the client
//     does not hear so; the acquire resolves it as ZooKeeper's protected
//     create does and adopts that entry, creating no second one.
//   - Client.LoseResponse(Delete): the next delete happens but the client
//     does not hear so; Release returns an error wrapping ErrResponseLost,
//     the lock is free, and calling Release again succeeds.
//   - Server.RewindTokens: a token counter goes backwards.
//   - Closing a partitioned client (baton.Client.Close) is a crash: its
//     leases end, but the server keeps its entries until the TTL passes.
//
// Server.Entries lists a lock's queue for assertions. Every goroutine
// memlock starts belongs to the Server and ends with Server.Close.
package memlock
