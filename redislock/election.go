package redislock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/baton-go/baton"
)

// Election is a leader election on one hash key
// "<prefix>:{<name>}:elect" holding the leader's owner, epoch and
// candidate ID. The epoch is the grant's fencing token. Candidates wait as
// mutex waiters do (their intents are listed by inspect); a grant and a
// release are published on the name's channel, which is how Observe learns
// about changes without polling, with a bounded poll for leaderships that
// end by expiry. It implements baton.Elector.
type Election struct {
	c    *Client
	name string
	k    keys
}

var _ baton.Elector = (*Election)(nil)

// Election returns the election called name.
func (c *Client) Election(name string) (*Election, error) {
	n, err := baton.ValidateName(name)
	if err != nil {
		return nil, fmt.Errorf("redislock: Election: %w", err)
	}
	return &Election{c: c, name: n, k: c.keysOf(n)}, nil
}

// Name returns the normalised election name.
func (e *Election) Name() string { return e.name }

// Key returns the Redis key of the leadership (a hash: owner, token, id).
func (e *Election) Key() string { return e.k.base + sfxElect }

// Campaign blocks until this candidate leads or ctx ends, with
// baton.DefaultID() as its ID.
func (e *Election) Campaign(ctx context.Context) (*baton.Leader, error) {
	return e.CampaignAs(ctx, baton.DefaultID())
}

// CampaignAs is Campaign with the candidate ID id, stored with the
// leadership for Leader and Observe.
func (e *Election) CampaignAs(ctx context.Context, id string) (*baton.Leader, error) {
	s := &spec{
		recipe: "leader", name: e.name,
		script:  acquireHash,
		keys:    []string{e.k.base + sfxElect, e.k.base + sfxElectWaiters, e.k.counter},
		detail:  id,
		publish: e.k.wake,
		waiters: e.k.base + sfxElectWaiters,
		wake:    e.k.wake,
	}
	l, err := e.c.acquire(ctx, s, true, 0)
	if err != nil {
		return nil, err
	}
	return baton.NewLeader(l, id), nil
}

// Leader returns the current leader (Entry: the key, Session: the grant's
// owner, ID: the candidate ID), or an error wrapping baton.ErrNoLeader.
func (e *Election) Leader(ctx context.Context) (baton.Candidate, error) {
	var v []any
	err := e.c.call(ctx, func(ctx context.Context) error {
		got, err := e.c.rdb.HMGet(ctx, e.Key(), "owner", "id").Result()
		if err == nil || errors.Is(err, redis.Nil) {
			v = got // read by the caller only when call returns nil
			return nil
		}
		return err
	})
	if err != nil {
		return baton.Candidate{}, fmt.Errorf("redislock: leader of %q: %w", e.name, err)
	}
	if len(v) != 2 || v[0] == nil {
		return baton.Candidate{}, fmt.Errorf("redislock: election %q: %w", e.name, baton.ErrNoLeader)
	}
	return baton.Candidate{Entry: e.Key(), Session: str(v[0]), ID: str(v[1])}, nil
}

// observePoll bounds how stale Observe can be about a leadership that
// ended by expiry (nobody publishes that).
func (e *Election) observePoll() time.Duration { return min(e.c.o.TTL/4, time.Second) }

// Observe sends the current leader (an empty Candidate while there is
// none) and then each change, until ctx ends or the client is closed; then
// it closes the channel. Its goroutine is owned by ctx.
func (e *Election) Observe(ctx context.Context) (<-chan baton.Candidate, error) {
	if err := e.c.checkOpen(); err != nil {
		return nil, err
	}
	out := make(chan baton.Candidate)
	go func() {
		defer close(out)
		var last baton.Candidate
		first := true
		for {
			woke, unwatch := e.c.hub.watch(e.k.wake)
			cur, err := e.Leader(ctx)
			if err == nil || errors.Is(err, baton.ErrNoLeader) {
				if first || cur != last {
					select {
					case out <- cur:
					case <-ctx.Done():
						unwatch()
						return
					case <-e.c.closing:
						unwatch()
						return
					}
					first, last = false, cur
				}
			}
			t := time.NewTimer(e.observePoll())
			select {
			case <-ctx.Done():
			case <-e.c.closing:
			case <-woke:
			case <-t.C:
			}
			t.Stop()
			unwatch()
			if ctx.Err() != nil || e.c.checkOpen() != nil {
				return
			}
		}
	}()
	return out, nil
}
