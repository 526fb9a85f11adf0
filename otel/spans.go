package batonotel

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/obsview"
)

// Span names: waiting and holding are separate spans, so that a trace
// shows how long a request waited for a lock apart from how long it (or
// the work it started) held it.
const (
	spanAcquire = "baton.acquire"
	spanHold    = "baton.hold"
)

// open is one acquire's spans, by Event.Acquire.
type open struct {
	acquire trace.Span // from AcquireStarted to Granted or AcquireFailed
	hold    trace.Span // from Granted (or the first lease event) to Lost or Released
}

// trace turns e into span changes. Spans are paired by Event.Acquire in
// a table guarded by o.mu; starting, annotating and ending spans happen
// under it so that events racing from different goroutines apply in one
// order. A batching span processor keeps that short: ending a span only
// queues it.
func (o *Observer) trace(ctx context.Context, e baton.Event) {
	if e.Acquire == 0 {
		return // nothing to pair
	}
	at := trace.WithTimestamp(e.Time)
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.spans.ended(e.Acquire) {
		// The lease ended before its Granted was delivered: close the
		// acquire span, start no hold span.
		if e.Kind == baton.EventGranted {
			o.finishAcquire(e, at)
		}
		return
	}
	p := o.spans.open[e.Acquire]
	switch e.Kind {
	case baton.EventAcquireStarted:
		if p = o.spans.add(e.Acquire); p != nil && p.acquire == nil {
			_, p.acquire = o.tracer.Start(ctx, spanAcquire, at, trace.WithAttributes(lockAttrs(e)...))
		}
	case baton.EventAcquireRetry:
		if p != nil && p.acquire != nil {
			p.acquire.AddEvent("baton.retry", at, trace.WithAttributes(
				keyAttempt.Int(e.Attempt), keyPosition.Int(e.Position)))
			if e.Err != nil {
				p.acquire.RecordError(e.Err, at)
			}
		}
	case baton.EventGranted:
		link := o.finishAcquire(e, at)
		if e.Reentered {
			break // a hold added to a lease that has its span
		}
		if h := o.holdSpan(ctx, e); h != nil && link.IsValid() {
			h.AddLink(trace.Link{SpanContext: link})
		}
	case baton.EventAcquireFailed:
		o.finishAcquire(e, at)
	case baton.EventSuspended:
		o.holdEvent(ctx, e, "baton.suspended")
	case baton.EventResumed:
		o.holdEvent(ctx, e, "baton.resumed", keySuspension.Float64(e.Duration.Seconds()))
	case baton.EventReleaseFailed:
		if h := o.holdSpan(ctx, e); h != nil {
			h.RecordError(e.Err, at, trace.WithAttributes(keyResult.String("release_failed")))
		}
	case baton.EventLost, baton.EventReleased:
		o.endHold(ctx, e, at)
	case baton.EventRecovered:
		if p != nil && p.acquire != nil {
			p.acquire.AddEvent("baton.recovered", at, trace.WithAttributes(keyCount.Int(e.Count)))
		}
	}
	o.spans.tidy(e.Acquire)
}

// finishAcquire ends the acquire span, if open, and returns its context
// for the hold span's link.
func (o *Observer) finishAcquire(e baton.Event, at trace.SpanEventOption) trace.SpanContext {
	p := o.spans.open[e.Acquire]
	if p == nil || p.acquire == nil {
		return trace.SpanContext{}
	}
	sp := p.acquire
	p.acquire = nil
	r := obsview.Result(e.Err)
	sp.SetAttributes(keyResult.String(r))
	if e.Err != nil {
		sp.RecordError(e.Err, at)
		sp.SetStatus(codes.Error, e.Err.Error())
	} else {
		sp.SetAttributes(grantAttrs(e)...)
		sp.SetAttributes(keyDepth.Int(e.Depth), keyReentered.Bool(e.Reentered))
	}
	sp.End(trace.WithTimestamp(e.Time))
	o.spans.tidy(e.Acquire)
	return sp.SpanContext()
}

// holdSpan returns the lease's hold span, starting it when this is the
// first event of the lease seen (normally the Granted; a Suspended or Lost
// from the engine's watcher can overtake it). A late start is backdated
// by Event.Hold to the grant. The parent is ctx's span: the acquire's
// caller, whose context the lease's context carries on.
func (o *Observer) holdSpan(ctx context.Context, e baton.Event) trace.Span {
	p := o.spans.open[e.Acquire]
	if p == nil {
		if p = o.spans.add(e.Acquire); p == nil {
			return nil
		}
	}
	if p.hold == nil {
		attrs := append(lockAttrs(e), grantAttrs(e)...)
		_, p.hold = o.tracer.Start(ctx, spanHold,
			trace.WithTimestamp(e.Time.Add(-e.Hold)), trace.WithAttributes(attrs...))
	}
	return p.hold
}

func (o *Observer) holdEvent(ctx context.Context, e baton.Event, name string, kv ...attribute.KeyValue) {
	if h := o.holdSpan(ctx, e); h != nil {
		h.AddEvent(name, trace.WithTimestamp(e.Time), trace.WithAttributes(kv...))
	}
}

// endHold ends the hold span: Released leaves its status unset, Lost sets
// an error with the cause.
func (o *Observer) endHold(ctx context.Context, e baton.Event, at trace.SpanEventOption) {
	h := o.holdSpan(ctx, e)
	o.spans.end(e.Acquire)
	if h == nil {
		return
	}
	if e.Kind == baton.EventReleased {
		h.SetAttributes(keyEnd.String("released"))
	} else {
		h.SetAttributes(keyEnd.String("lost"), keyCause.String(obsview.Cause(e.Err)))
		if e.Lead > 0 {
			h.SetAttributes(keyLead.Float64(e.Lead.Seconds()))
		}
		h.RecordError(e.Err, at)
		h.SetStatus(codes.Error, errText(e.Err, "lock lost"))
	}
	h.End(trace.WithTimestamp(e.Time))
}

func errText(err error, otherwise string) string {
	if err == nil {
		return otherwise
	}
	return err.Error()
}

// onCaller records resource events on the caller's span: the span in ctx
// is the write, the key or the task they concern.
func onCaller(ctx context.Context, e baton.Event) {
	sp := trace.SpanFromContext(ctx)
	if !sp.IsRecording() {
		return
	}
	at := trace.WithTimestamp(e.Time)
	switch e.Kind {
	case baton.EventStaleRejected:
		kv := []attribute.KeyValue{keyEngine.String(e.Engine), keyResource.String(e.Resource),
			token(keyToken, e.Token), keyOwner.String(e.Owner),
			token(keyStoredToken, e.StoredToken), keyStoredOwner.String(e.StoredOwner)}
		if e.Name != "" { // the fence could not tell (see fence.LockName): no empty attribute
			kv = append(kv, keyName.String(e.Name))
		}
		sp.AddEvent("baton.stale_rejected", at, trace.WithAttributes(kv...))
	case baton.EventIdempotency, baton.EventTask:
		kv := []attribute.KeyValue{keyEngine.String(e.Engine), keyResource.String(e.Resource), keyOutcome.String(e.Outcome)}
		if e.Kind == baton.EventTask {
			kv = append(kv, token(keyToken, e.Token), keyOwner.String(e.Owner))
		}
		sp.AddEvent("baton."+e.Kind.String(), at, trace.WithAttributes(kv...))
	}
}

// now stamps an event that came without a time.
func stamp(e *baton.Event) {
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
}

// spanTable holds the open spans. It is bounded by max entries; an
// acquire that finds it full gets no spans (its metrics still count).
type spanTable struct {
	open  map[uint64]*open
	gone  *obsview.EndedSet
	limit int
}

func newSpanTable(limit int) *spanTable {
	if limit <= 0 {
		limit = DefaultMaxTracked
	}
	return &spanTable{open: make(map[uint64]*open), gone: obsview.NewEndedSet(), limit: limit}
}

// add returns id's entry, making it if there is room.
func (t *spanTable) add(id uint64) *open {
	if p := t.open[id]; p != nil {
		return p
	}
	if len(t.open) >= t.limit {
		return nil
	}
	p := &open{}
	t.open[id] = p
	return p
}

func (t *spanTable) ended(id uint64) bool { return t.gone.Has(id) }

// end records that id's lease ended; its hold span is being ended.
func (t *spanTable) end(id uint64) {
	if p := t.open[id]; p != nil {
		p.hold = nil
	}
	t.gone.Add(id)
}

// tidy drops id's entry once it has no open span.
func (t *spanTable) tidy(id uint64) {
	if p := t.open[id]; p != nil && p.acquire == nil && p.hold == nil {
		delete(t.open, id)
	}
}
