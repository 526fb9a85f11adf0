package redislock

import (
	"github.com/baton-go/baton"
	"github.com/baton-go/baton/engine/leasekit"
)

// semaphore hands out up to N permits. Each permit is a member
// "<owner>:<token>" of a sorted set scored by its expiry on the server's
// clock, renewed by the keeper like any lease: a dead holder's permit
// expires and comes back by itself. Permits are not exclusive (holders
// get distinct, increasing tokens, but a token fences nothing between
// permit holders) and not reentrant.
//
// # N must agree
//
// N is stored on the server beside the permits ("<prefix>:{<name>}:sem:n",
// written by the first holder and kept while any permit is held). Every
// acquire script answers the stored N, so a client configured with another
// N notices at its first attempt and reports it to the function set with
// OnDisagreement (each stored N once per semaphore; reached through
// baton.As on the *baton.Semaphore); it is not an error, so that a rolling
// change of N does not fail acquires. Each client admits by its own N: the
// one with the larger N lets more holders in than the others expect, which
// is what the report is for.
type semaphore struct{ *leasekit.Semaphore }

var _ baton.Locker = (*semaphore)(nil)

// semaphore returns the semaphore called name with n permits; n < 1 fails
// with an error wrapping baton.ErrInvalidOption.
func (c *Client) semaphore(name string, n int) (*semaphore, error) {
	s, err := c.eng.Semaphore(name, n)
	if err != nil {
		return nil, err
	}
	return &semaphore{s}, nil
}
