package queuekit

import (
	"context"

	"github.com/baton-go/baton/internal/acqtrack"
)

// track is one observed acquire (see package acqtrack, which the lease
// recipes share). A recipe without an Observer passes a nil *track, and
// the acquire loop then builds no event at all.
type track = acqtrack.Track

// AcquireID returns the ID of the observed acquire ctx belongs to
// (baton.Event.Acquire), 0 outside one. Engines read it in their Session
// calls to tie their own events (a recovered protected create) to the
// acquire that caused them. Only acquires of recipes with an Observer
// carry one.
func AcquireID(ctx context.Context) uint64 { return acqtrack.ID(ctx) }

// begin starts tracking an acquire of r and emits EventAcquireStarted. It
// returns the acquire's context, which carries the ID for AcquireID.
func (r *recipe) begin(ctx context.Context) (*track, context.Context) {
	return acqtrack.Begin(ctx, r.obs, r.clk, r.b.Engine(), r.name, r.label)
}
