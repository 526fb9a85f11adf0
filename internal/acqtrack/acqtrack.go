// Package acqtrack reports one acquire to a baton.Observer: its start,
// each refused or failed attempt, and its outcome, and fills the
// observer's part of the Grant so the lease reports its own state changes.
// The queue recipes (package queuekit) and the lease recipes (package
// leasing) share it, so that every engine's acquire events have the same
// kinds and fields.
//
// An acquire without an Observer uses a nil *Track: every method is a
// no-op on nil, and the acquire loop builds no event at all.
package acqtrack

import (
	"context"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/clock"
	"github.com/baton-go/baton/engine"
)

// Track is one observed acquire: what its events share.
type Track struct {
	o         baton.Observer
	clk       clock.Clock
	engine    string
	name      string
	recipe    string
	id        uint64
	start     time.Time
	attempt   int
	session   string // set at the grant
	reentered bool
}

type ctxKey struct{}

// ID returns the ID of the observed acquire ctx belongs to
// (baton.Event.Acquire), 0 outside one.
func ID(ctx context.Context) uint64 {
	if t, ok := ctx.Value(ctxKey{}).(*Track); ok {
		return t.id
	}
	return 0
}

// Begin starts tracking an acquire and emits EventAcquireStarted. It
// returns the acquire's context, which carries the ID for ID. o must not
// be nil; clk nil means clock.Real.
func Begin(ctx context.Context, o baton.Observer, clk clock.Clock, eng, name, recipe string) (*Track, context.Context) {
	t := &Track{
		o: o, clk: clock.Or(clk), engine: eng, name: name,
		recipe: recipe, id: engine.NextAcquireID(),
	}
	t.start = t.clk.Now()
	ctx = context.WithValue(ctx, ctxKey{}, t) // not t.id: boxing it would allocate
	t.emit(ctx, baton.Event{Kind: baton.EventAcquireStarted, Time: t.start})
	return t, ctx
}

// Retry reports that an attempt did not grant and the acquire waits or
// retries: position is the number of entries ahead in a queue (-1
// unknown), err the attempt's error (nil when the lock was simply taken).
func (t *Track) Retry(ctx context.Context, position int, err error) {
	if t == nil {
		return
	}
	t.attempt++
	t.emit(ctx, baton.Event{Kind: baton.EventAcquireRetry, Attempt: t.attempt, Position: position, Err: err})
}

// Reentered marks the acquire as a re-entry of a lease ctx already held.
func (t *Track) Reentered() {
	if t != nil {
		t.reentered = true
	}
}

// End reports the acquire's outcome: a grant (fresh or reentrant) or the
// error it returned.
func (t *Track) End(ctx context.Context, l *baton.Lease, err error) {
	if t == nil {
		return
	}
	now := t.clk.Now()
	e := baton.Event{Time: now, Wait: now.Sub(t.start)}
	if err != nil {
		e.Kind, e.Err = baton.EventAcquireFailed, err
		t.emit(ctx, e)
		return
	}
	e.Kind, e.Token, e.Owner, e.Session, e.Depth = baton.EventGranted, l.Token(), l.Owner(), t.session, 1
	if t.reentered {
		e.Reentered, e.Depth = true, l.Holds()
	}
	t.emit(ctx, e)
}

// Grant fills the observer's part of a Grant.
func (t *Track) Grant(g *engine.Grant, session string) {
	if t == nil {
		return
	}
	t.session = session
	g.Observer, g.Recipe, g.Session, g.Acquire = t.o, t.recipe, session, t.id
}

func (t *Track) emit(ctx context.Context, e baton.Event) {
	if e.Time.IsZero() {
		e.Time = t.clk.Now()
	}
	e.Engine, e.Name, e.Recipe, e.Acquire = t.engine, t.name, t.recipe, t.id
	t.o.Observe(ctx, e)
}
