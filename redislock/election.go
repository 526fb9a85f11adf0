package redislock

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/engine/leasekit"
)

// election is a leader election on one hash key
// "<prefix>:{<name>}:elect" holding the leader's owner, epoch and
// candidate ID. The epoch is the grant's fencing token. Candidates wait as
// mutex waiters do (their intents are listed by inspect); a grant and a
// release are published on the name's channel, which is how Observe learns
// about changes without polling, with a bounded poll (ObservePeriod) for
// leaderships that end by expiry. It implements baton.Elector, with the
// operations of leasekit.Election. A *baton.Election of a Redis client
// wraps one; baton.As reaches its Key.
type election struct {
	*leasekit.Election
	key string
}

var _ baton.Elector = (*election)(nil)

// election returns the election called name.
func (c *Client) election(name string) (*election, error) {
	e, err := c.eng.Election(name)
	if err != nil {
		return nil, err
	}
	return &election{Election: e, key: c.keysOf(e.Name()).base + sfxElect}, nil
}

// Key returns the Redis key of the leadership (a hash: owner, token, id,
// proc), reached through baton.As as a mutex's Key is.
func (e *election) Key() string { return e.key }

// Leader reads the leadership of name (Session: the grant's owner, ID:
// the candidate ID), or an error wrapping baton.ErrNoLeader. Entry is
// left empty: the key (election.Key) is every leader's, so the grant's
// owner is what names one leadership.
func (s *store) Leader(ctx context.Context, name string) (baton.Candidate, error) {
	key := s.c.keysOf(name).base + sfxElect
	var v []any
	err := s.c.call(ctx, func(ctx context.Context) error {
		got, err := s.c.rdb.HMGet(ctx, key, "owner", "id").Result()
		if err == nil || errors.Is(err, redis.Nil) {
			v = got // read by the caller only when call returns nil
			return nil
		}
		return err
	})
	if err != nil {
		return baton.Candidate{}, fmt.Errorf("redislock: leader of %q: %w", name, err)
	}
	if len(v) != 2 || v[0] == nil {
		return baton.Candidate{}, fmt.Errorf("redislock: election %q: %w", name, baton.ErrNoLeader)
	}
	return baton.Candidate{Session: str(v[0]), ID: str(v[1])}, nil
}

// Watch wakes at the next release or grant published on name's channel
// (or released by this client).
func (s *store) Watch(name string) (<-chan struct{}, func()) {
	return s.c.hub.watch(s.c.keysOf(name).wake)
}
