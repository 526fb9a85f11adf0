package baton

import "errors"

// Sentinel errors. Errors returned by baton and its engines wrap these; test
// them with errors.Is, never by message.
var (
	// ErrLost means the lease ended without a Release: the session expired,
	// the connection stayed away for longer than the session could survive,
	// or the entry disappeared. It is final; a new session never resurrects
	// a lost lease. It is also the cause of a lost lease's context.
	ErrLost = errors.New("baton: lock lost")

	// ErrReleased is the cause of a lease's context after a successful
	// final Release.
	ErrReleased = errors.New("baton: lease released")

	// ErrNotHeld is returned by Release when the lease holds nothing any
	// more (released more often than acquired).
	ErrNotHeld = errors.New("baton: lock not held")

	// ErrNotAcquired is returned by TryLock when another owner holds the
	// lock. baton never returns (nil, nil) for "not acquired".
	ErrNotAcquired = errors.New("baton: lock held by another owner")

	// ErrSessionLost is returned by an acquire whose own session or lease
	// expired while it was waiting: its queue position is dead and it never
	// acquires on it (CURATOR-604, etcd #19597). The cause of a held lease
	// lost because its engine session ended (a ZooKeeper session, an etcd
	// lease) wraps it too, beside ErrLost.
	ErrSessionLost = errors.New("baton: session lost")

	// ErrUnavailable is wrapped (beside the context error) when an acquire
	// gave up because the backend could not be reached, as opposed to the
	// lock staying taken.
	ErrUnavailable = errors.New("baton: backend unavailable")

	// ErrStaleToken is returned by fenced resources when a write carries a
	// token older than one already accepted, or an equal token from another
	// owner. A rejected write changes nothing.
	ErrStaleToken = errors.New("baton: stale fencing token")

	// ErrInvalidName is returned for a lock name that breaks the naming
	// rule (see ValidateName).
	ErrInvalidName = errors.New("baton: invalid lock name")

	// ErrInvalidOption is returned for a bad option value (a zero or
	// negative TTL, an unparseable URL, …).
	ErrInvalidOption = errors.New("baton: invalid option")

	// ErrUpgradeRefused is returned when a reader asks for the write side of
	// the same read/write lock: two readers upgrading would deadlock.
	ErrUpgradeRefused = errors.New("baton: read-to-write upgrade refused")

	// ErrNoLeader is returned when an election has no candidate.
	ErrNoLeader = errors.New("baton: no leader")

	// ErrResigning is returned by a leader's admission check once Resign
	// has begun: the leader takes no new work while it drains.
	ErrResigning = errors.New("baton: leader resigning")

	// ErrAuth is wrapped when the backend refused authentication or TLS.
	ErrAuth = errors.New("baton: authentication or TLS refused")

	// ErrClosed is returned by calls on a closed client.
	ErrClosed = errors.New("baton: client closed")
)
