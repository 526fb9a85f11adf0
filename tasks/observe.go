package tasks

import (
	"context"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/engine"
)

// emit tells the Store's Observer of a write to the task key by c
// (baton.EventTask). Callers test s.obs first.
func (s *Store) emit(ctx context.Context, outcome, key string, c Claimant, err error) {
	engine.Emit(ctx, s.obs, baton.Event{
		Kind: baton.EventTask, Engine: "tasks", Resource: key, Token: c.Epoch, Owner: c.Owner,
		Outcome: outcome, Err: err,
	})
}

// tookOver reports a takeover: the new claimant, the owner it replaced
// (StoredToken, StoredOwner), and in Duration how long the task had gone
// without a write from that owner — no checkpoint and no heartbeat — by
// the database's clock: the least work since its last checkpoint that the
// new owner may have to do again.
func (s *Store) tookOver(ctx context.Context, seen Task, cl *Claim) {
	t := cl.Task()
	engine.Emit(ctx, s.obs, baton.Event{
		Kind: baton.EventTask, Engine: "tasks", Resource: seen.Key, Token: cl.c.Epoch, Owner: cl.c.Owner,
		Outcome: "takeover", StoredToken: seen.Epoch, StoredOwner: seen.Owner, Duration: t.Updated.Sub(seen.Updated),
	})
}

// emitStale reports a write refused because the task is now another
// claimant's or moved on.
func (s *Store) emitStale(ctx context.Context, key string, c Claimant, now Task) {
	engine.Emit(ctx, s.obs, baton.Event{
		Kind: baton.EventTask, Engine: "tasks", Resource: key, Token: c.Epoch, Owner: c.Owner,
		Outcome: "stale", StoredToken: now.Epoch, StoredOwner: now.Owner, Err: baton.ErrStaleToken,
	})
}
