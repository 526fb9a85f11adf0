package baton

import (
	"context"
	"time"

	"github.com/baton-go/baton/internal/bridge"
)

// The engine side of leases, handed to package engine through the bridge
// so that none of it is exported here.
func init() {
	bridge.NewLease = func(parent context.Context, g bridge.Grant) any {
		obs, _ := g.Observer.(Observer)
		l, _ := newLease(parent, grant{
			Name: g.Name, Engine: g.Engine, Token: g.Token, Owner: g.Owner, Key: g.Key,
			Release: g.Release, OnEnd: g.OnEnd, Observer: obs,
			Recipe: g.Recipe, Session: g.Session, Acquire: g.Acquire,
		})
		return l
	}
	bridge.Suspend = func(l any) { l.(*Lease).ctl.Suspend() }
	bridge.Resume = func(l any) { l.(*Lease).ctl.Resume() }
	bridge.LoseAhead = func(l any, cause error, lead time.Duration) bool {
		return l.(*Lease).ctl.LoseAhead(cause, lead)
	}
	bridge.ReleaseFailed = func(l any, err error) bool { return l.(*Lease).ctl.releaseFailed(err) }
	bridge.Reenter = func(ctx context.Context, key any) (any, error) {
		l, err := reenter(ctx, key)
		return l, err
	}
	bridge.Holding = func(ctx context.Context, key any) (any, bool) {
		l, ok := holding(ctx, key)
		return l, ok
	}
	bridge.NewLeader = func(l any, id string) any { return newLeader(l.(*Lease), id) }
}
