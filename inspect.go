package baton

import "time"

// Inspection is what Client.Inspect reads about one lock name: the same
// shape on every engine, so one tool (baton inspect, the exporter page)
// reads them all.
type Inspection struct {
	Name   string // the lock's name as asked
	Engine string
	// Holders hold the lock now: one for a mutex, a write lock or an
	// election; the readers of a read lock; up to N permits.
	Holders []Entry
	// Waiters wait for it, in the order they will be served.
	Waiters []Entry
	// Other lists what lies under the name and takes no part in it: an
	// etcd key that is no lease's, a node no recipe made. baton never
	// removes these.
	Other []Entry
	// Permits is a semaphore's N as its holders stored it, 0 when the
	// engine cannot tell or nothing is held.
	Permits int
	// Notes says what the engine could not tell.
	Notes []string
}

// Entry is one holder, waiter or stray entry of a lock. Fields the engine
// cannot know are zero.
type Entry struct {
	// Mode is "mutex", "read", "write", "permit" or "leader".
	Mode string
	// Token is a holder's fencing token (a waiter's: its place), 0 when
	// the engine cannot read it from outside (ZooKeeper's tokens are
	// reads, not stored values).
	Token uint64
	// Owner is the grant's identity as the engine stores it: the lease's
	// Owner(), a ZooKeeper node, an etcd lease.
	Owner string
	// Process is who holds or waits, where the engine stores it.
	Process
	// Age is how long the entry has existed; Left how long its lease
	// has left on the server's clock.
	Age, Left time.Duration
	// Dead marks an entry whose session or lease no longer exists, which
	// nothing will remove by itself; Duplicate a retried create's extra
	// entry; Foreign what no baton recipe made.
	Dead, Duplicate, Foreign bool
	// Note explains flags and unknowns in a few words.
	Note string
}

// Process describes the process behind a grant: recorded with the grant
// where the engine can store it (node data, key value, hash field,
// column), so that an operator sees who holds a lock. It never holds a
// secret: no environment, no arguments.
type Process struct {
	Host    string
	PID     int
	Program string            // the program's name; baton run's COMMAND
	Labels  map[string]string // short labels the caller set (WithLabel)
}

// MaxProcessLen caps the holder record an engine stores with each grant.
const MaxProcessLen = 256
