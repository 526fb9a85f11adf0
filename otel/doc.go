// Package batonotel reports what baton does to OpenTelemetry: spans that
// separate waiting for a lock from holding it, and the metrics package
// batonprom exports, through the metric API.
//
//	o, err := batonotel.New(batonotel.Options{}) // the global providers
//	opts.Observer = o // an engine's, fence's, idem's or tasks' Options
//
// # Spans
//
// An acquire is a span "baton.acquire" from its start to its grant or
// failure, a child of the span in the acquire's context. A failure sets
// an error status and records the error; retries are its events. A grant
// starts a span "baton.hold" that lasts until the lease is released or
// lost. It is a sibling of the acquire span, under the same parent, with
// a link to the acquire span: holding usually outlives the request that
// waited. Suspended and Resumed are its events; a loss ends it with an
// error status, the cause (baton.lost.cause: deadline, gone, expired,
// session_expired, closed, other) and, when known, the lead before the
// server's expiry. Both spans carry baton.lock.name, baton.engine,
// baton.recipe and baton.acquire.id, and the grant's baton.token,
// baton.owner and baton.session.
//
// A fenced resource's refusal is an event "baton.stale_rejected" on the
// span in the writer's context, with the writer's and the stored token
// and owner, which ties the rejected write to the grant it came from.
//
// Spans are paired by Event.Acquire in a table guarded by one mutex.
// An entry is removed when its spans end, and the table holds at most
// Options.MaxTracked entries. Events of one lease come from different
// goroutines; one that overtakes the grant starts the hold span itself,
// backdated by Event.Hold, and the last few thousand ended leases are
// remembered so that a straggler opens no new span. Events without an
// Acquire ID make no spans.
//
// # Metrics
//
// Instruments are named so that an OpenTelemetry-to-Prometheus exporter
// yields batonprom's names: baton.acquires (baton_acquires_total),
// baton.acquire.wait in seconds (baton_acquire_wait_seconds), the
// up-down counters baton.acquires.waiting, baton.leases.held and
// baton.leases.suspended, and so on (see the README). Attributes are
// bounded: baton.engine, baton.recipe, and a derived baton.result,
// baton.lost.cause or baton.outcome; Options.LockNames adds the name. The
// up-down counters are kept as counts of live entries, so they never go
// below zero whatever order events arrive in.
package batonotel
