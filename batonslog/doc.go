// Package batonslog writes baton's events (baton.Observer) as structured
// log/slog records, one record per event:
//
//	o := batonslog.New(logger.Handler(), batonslog.Options{})
//	cli, _ := zklock.Dial(ctx, servers, zklock.Options{Observer: o})
//
// # Levels
//
// What an operator must look at is logged at Warn: a lease Lost, a write
// refused as stale at a fenced resource (EventStaleRejected: proof that
// some holder wrote after it was superseded), a release that did not reach
// the server, an idempotency key moved to manual handling, a task write
// refused as stale, and a keeper renewal that failed or answered late.
//
// EventSuspended is logged at Info, with EventResumed: a suspension is
// the normal outcome of a short network blip and most end in Resumed a
// moment later; one that matters ends in Lost, which is a Warn. Logging
// every suspension at Warn would bury the losses among blips. Change it
// with Options.Level if suspensions are rare and interesting in your
// deployment.
//
// Failed acquires, recovered creates, task takeovers and idempotency
// outcomes that leave a record in doubt are Info; the routine flow —
// acquire start, retry, grant, release, renewals, cache hits — is Debug,
// so that a handler at Info costs an Enabled call per routine event and
// nothing else.
//
// # Attributes
//
// The message is "baton " and the event kind ("baton granted"). The
// attributes are stable snake_case keys, present only when the event sets
// them: event, engine, lock, recipe, acquire, attempt, token, owner,
// session, position, depth, reentered, wait_ms, hold_ms, duration_ms,
// lead_ms, late, count, resource, stored_token, stored_owner, outcome,
// err. Durations are float64 milliseconds, so JSON consumers need not
// know Go's duration encoding. Lock names can carry tenant or payment
// IDs, and so can owners built from a lock's path: wrap the observer
// with baton.HashNames to log pseudonyms instead (lock, resource, owner
// and stored_owner, and the names inside session and err).
//
// Records carry the event's time and are handled with the context passed
// to Observe, so handlers that read trace IDs from it correlate log lines
// with spans.
package batonslog
