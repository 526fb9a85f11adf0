package kubelock

import (
	"github.com/baton-go/baton"
	"github.com/baton-go/baton/engine/leasekit"
)

// kubeMutex is an exclusive lock: the holder of the name's Lease, named by
// spec.holderIdentity (the grant's owner), as a client-go LeaderElector
// holds one. Its waiters keep no intent: a release wakes them all and
// the first conditional update wins (see the package doc's "Waiting"). It implements baton.Locker, with the lock operations of
// package leasekit (Lock, TryLock, LockFor, TryLockFor; fixed lease times
// in whole milliseconds). Locking it again with a context derived from
// one of its own leases re-enters (see the baton package doc). Users
// reach LockFor, TryLockFor and Lease through baton.As on the
// *baton.Mutex.
type kubeMutex struct {
	*leasekit.Mutex
	lease string
}

var _ baton.Locker = (*kubeMutex)(nil)

// mutex returns the exclusive lock called name. An invalid name fails with
// an error wrapping baton.ErrInvalidName.
func (c *Client) mutex(name string) (*kubeMutex, error) {
	m, err := c.eng.Mutex(name)
	if err != nil {
		return nil, err
	}
	return &kubeMutex{Mutex: m, lease: objectName(m.Name())}, nil
}

// Lease returns the name of the lock's Lease.
func (m *kubeMutex) Lease() string { return m.lease }

// kubeRWMutex is a read/write lock on the name's Lease, with the operations
// of leasekit.RWMutex: readers and the writer are entries of the state
// annotation, waiters too, each with a ticket, and they are served in
// ticket order: a reader is granted while no writer holds and none waits
// ahead of it, a writer when nobody holds and nobody waits ahead of it.
// A waiting writer's intent is what new readers stop at, so a stream of
// readers cannot starve it. Every grant takes the name's next token, so a
// writer's token exceeds every earlier reader's.
type kubeRWMutex struct{ *leasekit.RWMutex }

var _ baton.Locker = (*kubeRWMutex)(nil)

// rwMutex returns the read/write lock called name.
func (c *Client) rwMutex(name string) (*kubeRWMutex, error) {
	rw, err := c.eng.RWMutex(name)
	if err != nil {
		return nil, err
	}
	return &kubeRWMutex{rw}, nil
}

// kubeSemaphore hands out up to N permits, each an entry of the name's state
// annotation renewed by the keeper like any lease: a dead holder's permit
// comes back when the others judge it expired. Waiters are served in
// ticket order, so a newcomer does not overtake a waiter when a permit
// frees up. Permits are not exclusive (holders get distinct, increasing
// tokens, but a token fences nothing between permit holders) and not
// reentrant.
//
// # N must agree
//
// Every permit and waiter entry stores the N it was taken with; every
// attempt reads them, and each N other than this Semaphore's is reported
// once to the function set with OnDisagreement (not as an error: a
// rolling change of N must not fail acquires). Each client admits by its
// own N. Users set it through baton.As on the *baton.Semaphore:
//
//	d, ok := baton.As[interface{ OnDisagreement(func(leasekit.Disagreement)) }](sem)
type kubeSemaphore struct{ *leasekit.Semaphore }

var _ baton.Locker = (*kubeSemaphore)(nil)

// semaphore returns the semaphore called name with n permits; n < 1 fails
// with an error wrapping baton.ErrInvalidOption.
func (c *Client) semaphore(name string, n int) (*kubeSemaphore, error) {
	s, err := c.eng.Semaphore(name, n)
	if err != nil {
		return nil, err
	}
	return &kubeSemaphore{s}, nil
}

// kubeElection is a leader election on the name's Lease, kept exactly as
// client-go's LeaseLock keeps one (see the package doc's "client-go"):
// the leader is spec.holderIdentity (the grant's owner; the candidate ID
// is in the state annotation), so a client-go LeaderElector on the same
// Lease never leads beside a baton leader, and either takes over from
// the other once it released or its lease ran out. The epoch is the
// grant's fencing token. Candidates wait in ticket order, their intents
// listed by Inspect; Observe wakes on the name's watch, with a bounded
// poll (ObservePeriod) for leaderships that end by expiry. It implements
// baton.Elector, with the operations of leasekit.Election; users reach
// its Lease through baton.As on the *baton.Election.
type kubeElection struct {
	*leasekit.Election
	lease string
}

var _ baton.Elector = (*kubeElection)(nil)

// election returns the election called name.
func (c *Client) election(name string) (*kubeElection, error) {
	e, err := c.eng.Election(name)
	if err != nil {
		return nil, err
	}
	return &kubeElection{Election: e, lease: objectName(e.Name())}, nil
}

// Lease returns the name of the election's Lease.
func (e *kubeElection) Lease() string { return e.lease }
