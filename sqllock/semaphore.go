package sqllock

import (
	"strconv"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/engine/leasekit"
	"github.com/baton-go/baton/engine/queuekit"
)

// semaphore hands out up to N permits, one row each (kind "permit") among
// the rows of its name (see recipe.go). A permit comes back when its
// holder releases it or its lease expires: a dead holder's permit is free
// within a TTL. Waiters keep an intent row ("swait") and are served in
// the order they started waiting: a permit is granted when the live
// permits plus the waiters ahead of the caller number fewer than N, so a
// newcomer cannot overtake a waiter when a permit frees up.
//
// Permits are not exclusive: each gets a token of its own, larger than
// every earlier grant's of the name, but holders hold at once. Permits are
// not reentrant: each Acquire takes one more permit.
//
// # N must agree
//
// Every permit and intent row stores the N it was taken with ("baton:
// permits=3", queuekit.PermitsData). Every attempt reads the name's rows
// anyway (to count the permits), and the live rows of other owners it
// read are checked against this client's N, whether the attempt granted
// or not: each row taken with another N is reported once to the function
// set with OnDisagreement, reached with baton.As[interface{
// OnDisagreement(func(leasekit.Disagreement)) }] on the *baton.Semaphore.
// So with one permit of N=1 held, a client configured with N=1000 is told
// at its first grant, and a client with a smaller N when it is refused. It is not returned as an error, as on the
// queue engines: whether a report comes depends on who holds at that
// moment, so an error would come and go with the load, and a rolling
// change of N would fail acquires that are otherwise fine. No stored N
// wins: each client admits by its own N (as on Redis and ZooKeeper), and
// the report is what tells the operator that they differ.
type semaphore struct{ *leasekit.Semaphore }

var _ baton.Locker = (*semaphore)(nil)

// semaphore returns the semaphore called name with n permits. n < 1 fails
// with an error wrapping baton.ErrInvalidOption, an invalid name with one
// wrapping baton.ErrInvalidName.
func (c *Client) semaphore(name string, n int) (*semaphore, error) {
	s, err := c.eng.Semaphore(name, n)
	if err != nil {
		return nil, err
	}
	return &semaphore{s}, nil
}

// permitGrant counts the live holders (permits, and any foreign row, which
// counts as one) and the waiters ahead of the caller's ticket (all of them
// while it has none), and grants while they are fewer than n.
func permitGrant(others []recipeRow, ticket uint64, n int) bool {
	taken := 0
	for _, o := range others {
		if o.kind != kindPermitWait || ticket == 0 || o.token < ticket {
			taken++
		}
	}
	return taken < n
}

// permitsOf lists the N stored by the permit and waiter rows among
// others, for the disagreement check: each row is judged once, by owner.
func permitsOf(name string, others []recipeRow) []leasekit.Permits {
	var ps []leasekit.Permits
	for _, o := range others {
		if o.kind != kindPermit && o.kind != kindPermitWait {
			continue
		}
		m, _ := queuekit.ParsePermits([]byte(o.data))
		ps = append(ps, leasekit.Permits{ID: o.owner, Lease: name + "/" + strconv.FormatInt(o.slot, 10) + "/" + o.owner, N: m})
	}
	return ps
}
