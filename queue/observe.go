package queue

import (
	"context"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/clock"
)

// track is one observed acquire: what its events share. A recipe without
// an Observer passes a nil *track, and the acquire loop then builds no
// event at all; every method is a no-op on nil.
type track struct {
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

type acquireKey struct{}

// AcquireID returns the ID of the observed acquire ctx belongs to
// (baton.Event.Acquire), 0 outside one. Engines read it in their Session
// calls to tie their own events (a recovered protected create) to the
// acquire that caused them. Only acquires of recipes with an Observer
// carry one.
func AcquireID(ctx context.Context) uint64 {
	if t, ok := ctx.Value(acquireKey{}).(*track); ok {
		return t.id
	}
	return 0
}

// begin starts tracking an acquire of r and emits EventAcquireStarted. It
// returns the acquire's context, which carries the ID for AcquireID.
func (r *recipe) begin(ctx context.Context) (*track, context.Context) {
	t := &track{
		o: r.obs, clk: clock.Or(r.clk), engine: r.b.Engine(), name: r.name,
		recipe: r.label, id: baton.NextAcquireID(),
	}
	t.start = t.clk.Now()
	ctx = context.WithValue(ctx, acquireKey{}, t) // not t.id: boxing it would allocate
	t.emit(ctx, baton.Event{Kind: baton.EventAcquireStarted, Time: t.start})
	return t, ctx
}

// retry reports that the rule refused the entry and the acquire waits:
// ahead is the number of entries before it in the queue.
func (t *track) retry(ctx context.Context, ahead int) {
	if t == nil {
		return
	}
	t.attempt++
	t.emit(ctx, baton.Event{Kind: baton.EventAcquireRetry, Attempt: t.attempt, Position: ahead})
}

// end reports the acquire's outcome: a grant (fresh or reentrant) or the
// error it returned.
func (t *track) end(ctx context.Context, l *baton.Lease, err error) {
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

// grant fills the observer's part of a Grant.
func (t *track) grant(g *baton.Grant, session string) {
	if t == nil {
		return
	}
	t.session = session
	g.Observer, g.Recipe, g.Session, g.Acquire = t.o, t.recipe, session, t.id
}

func (t *track) emit(ctx context.Context, e baton.Event) {
	if e.Time.IsZero() {
		e.Time = t.clk.Now()
	}
	e.Engine, e.Name, e.Recipe, e.Acquire = t.engine, t.name, t.recipe, t.id
	t.o.Observe(ctx, e)
}
