package redlock

import (
	"github.com/baton-go/baton/engine/leasekit"
	"github.com/baton-go/baton/internal/rediseval"
)

// bound is what every acquire and release of one Mutex sends unchanged:
// its keys, built and boxed once when the Mutex is made (leasekit.Binder)
// instead of on every attempt, which saved about twenty allocations of an
// uncontended lock+unlock on five nodes. It rides on keeper.Ref's Aux
// (in a grant once granted), so that the release finds it too. It is shared by
// every acquire of the Mutex and by the keeper, and never written to.
type bound struct {
	name string
	// acq: the acquire script's keys (lock, counter, index, waiters,
	// intents); raise: the write-back's (lock, counter); three: the
	// unlock's and one ref's release's (lock, waiters, intents).
	acq, raise, three    []string
	acqB, raiseB, threeB []any // the same, boxed
}

// grant is a granted attempt's Aux: the Mutex's keys and the quorum
// token, which the renewals record on the nodes (see renewScript).
type grant struct {
	b     *bound
	token uint64
}

// boundOf reads a ref's Aux: the Mutex's keys, if any, and the grant's
// quorum token (0 for an attempt that was not granted).
func boundOf(aux any) (*bound, uint64) {
	switch a := aux.(type) {
	case *bound:
		return a, 0
	case *grant:
		return a.b, a.token
	}
	return nil, 0
}

// bind builds name's bound keys.
func (c *Client) bind(name string) *bound {
	lock, waiters, intents := c.lockKey(name), c.waitersKey(name), c.intentsKey(name)
	b := &bound{
		name:  name,
		acq:   []string{lock, c.keyCtr, c.keyIdx, waiters, intents},
		raise: []string{lock, c.keyCtr},
		three: []string{lock, waiters, intents},
	}
	b.acqB, b.raiseB, b.threeB = rediseval.BoxKeys(b.acq), rediseval.BoxKeys(b.raise), rediseval.BoxKeys(b.three)
	return b
}

// Bind builds the mutex's keys once (leasekit.Binder).
func (s *store) Bind(name string, kind leasekit.Kind) any {
	if kind != leasekit.KindMutex {
		return nil
	}
	return s.c.bind(name)
}

var _ leasekit.Binder = (*store)(nil)
