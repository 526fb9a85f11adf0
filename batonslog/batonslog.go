package batonslog

import (
	"context"
	"log/slog"
	"time"

	"github.com/baton-go/baton"
)

// Options configure New. The zero value uses Level.
type Options struct {
	// Level, if set, chooses each event's record level instead of the
	// package's Level (which it may call for the events it leaves alone).
	Level func(e baton.Event) slog.Level
}

// Observer is a baton.Observer writing to a slog.Handler. It is safe for
// concurrent use as far as its handler is.
type Observer struct {
	h     slog.Handler
	level func(baton.Event) slog.Level
}

var _ baton.Observer = (*Observer)(nil)

// New returns an Observer writing records to h (logger.Handler() for a
// *slog.Logger).
func New(h slog.Handler, opts Options) *Observer {
	o := &Observer{h: h, level: opts.Level}
	if o.level == nil {
		o.level = Level
	}
	return o
}

// Level is the default level of e's record (see the package doc).
func Level(e baton.Event) slog.Level {
	switch e.Kind {
	case baton.EventLost, baton.EventStaleRejected, baton.EventReleaseFailed:
		return slog.LevelWarn
	case baton.EventSuspended, baton.EventResumed, baton.EventAcquireFailed, baton.EventRecovered:
		return slog.LevelInfo
	case baton.EventRenewal:
		if e.Err != nil || e.Late {
			return slog.LevelWarn
		}
	case baton.EventIdempotency:
		switch e.Outcome {
		case "manual":
			return slog.LevelWarn
		case "unknown", "settled", "failed":
			return slog.LevelInfo
		}
	case baton.EventTask:
		switch e.Outcome {
		case "stale":
			return slog.LevelWarn
		case "takeover":
			return slog.LevelInfo
		}
	}
	return slog.LevelDebug
}

// Observe writes e as one record, if h is enabled at its level.
func (o *Observer) Observe(ctx context.Context, e baton.Event) {
	lvl := o.level(e)
	if !o.h.Enabled(ctx, lvl) {
		return
	}
	t := e.Time
	if t.IsZero() {
		t = time.Now()
	}
	r := slog.NewRecord(t, lvl, "baton "+e.Kind.String(), 0)
	addAttrs(&r, e)
	_ = o.h.Handle(ctx, r) // an Observer has no one to return a handler's error to
}

// addAttrs adds e's set fields to r.
func addAttrs(r *slog.Record, e baton.Event) {
	r.AddAttrs(slog.String("event", e.Kind.String()))
	str := func(k, v string) {
		if v != "" {
			r.AddAttrs(slog.String(k, v))
		}
	}
	num := func(k string, v int) {
		if v != 0 {
			r.AddAttrs(slog.Int(k, v))
		}
	}
	u64 := func(k string, v uint64) {
		if v != 0 {
			r.AddAttrs(slog.Uint64(k, v))
		}
	}
	ms := func(k string, d time.Duration) {
		if d != 0 {
			r.AddAttrs(slog.Float64(k, float64(d)/float64(time.Millisecond)))
		}
	}
	str("engine", e.Engine)
	str("lock", e.Name)
	str("recipe", e.Recipe)
	u64("acquire", e.Acquire)
	num("attempt", e.Attempt)
	u64("token", e.Token)
	str("owner", e.Owner)
	str("session", e.Session)
	if e.Kind == baton.EventAcquireRetry {
		r.AddAttrs(slog.Int("position", e.Position)) // 0 (at the head) is news here
	}
	num("depth", e.Depth)
	if e.Reentered {
		r.AddAttrs(slog.Bool("reentered", true))
	}
	ms("wait_ms", e.Wait)
	ms("hold_ms", e.Hold)
	ms("duration_ms", e.Duration)
	ms("lead_ms", e.Lead)
	if e.Late {
		r.AddAttrs(slog.Bool("late", true))
	}
	num("count", e.Count)
	str("resource", e.Resource)
	u64("stored_token", e.StoredToken)
	str("stored_owner", e.StoredOwner)
	str("outcome", e.Outcome)
	if e.Err != nil {
		r.AddAttrs(slog.String("err", e.Err.Error()))
	}
}
