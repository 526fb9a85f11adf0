// Package keeper holds leases on stores that expire them by TTL (SQL rows,
// Redis keys): it renews them, watches the time left, and reports Suspended
// and Lost through engine.Control. It is written once and shared by every
// TTL engine; it knows nothing about SQL or Redis, only the small Store
// interface the engine implements.
//
// # Timing
//
// Every renewable lease is renewed every TTL/3, all of a Keeper's leases in
// the same round, in batches of Store.BatchSize (one round trip each). For
// each lease the keeper records the send time of the last renewal (or
// acquire) the store confirmed, read on the keeper's clock (Options.Clock:
// in production the time package, whose readings carry Go's monotonic
// clock). The server set the new expiry when it executed that request,
// which is after it was sent, so the server-side expiry is never earlier
// than sendTime + TTL. From that:
//
//   - Suspended at sendTime + TTL/2: no renewal sent since was confirmed,
//     and the one sent TTL/3 after it has gone TTL/6 without an answer.
//     Ownership is in doubt: pause side effects. A later confirmed
//     renewal moves the lease back to Held.
//   - Lost at sendTime + TTL − DriftMargin. DriftMargin (default
//     max(TTL/10, 100ms)) absorbs clock-rate drift between this host and
//     the server and the scheduling delay between the deadline and the
//     moment the lease's context is cancelled; it is what makes "Lost
//     strictly before the server can expire the lease" hold.
//   - Lost at once, final, when a renewal finds the lease gone, expired or
//     owned by someone else. The keeper never re-takes an expired lease:
//     renewal is conditional on the owner and on the lease being unexpired
//     on the server's clock.
//
// A lease with a fixed lease time (Hold with fixed > 0) is never renewed
// and is Lost at sendTime + fixed − min(DriftMargin, fixed/4), as a
// Redisson lock with an explicit leaseTime expires.
//
// None of this survives a host that suspends (Go's monotonic clock stops);
// fencing tokens do.
//
// # Goroutines and timers
//
// A Keeper runs two long-lived goroutines, whatever the number of leases:
// the renewer (rounds of batched renewals, and the queued releases between
// them) and the watchdog (suspensions, deadlines, and the ends of the
// store requests in flight). Each renewal batch's Store.Renew call runs in
// a goroutine of its own, so that the renewer can stop waiting for a slow
// answer and still have it applied when it comes. At most three of them
// wait for an answer at once, if the Store heeds its context: the renewer
// waits at least TTL/3 for each unanswered batch before it sends the next,
// and the watchdog cancels each request's context less than TTL after it
// was sent. A batch of queued releases also runs in a goroutine of its
// own, and the renewer waits for it only until the next round is due, so
// that a slow store answering a release never delays a renewal; its
// request is cancelled once its leases must have expired on the server,
// at most TTL + TTL/3 after they were queued. Close stops
// the two goroutines, cancels the requests in flight and waits for all of
// them.
//
// The renewer and the watchdog each sleep on one timer of the keeper's
// clock, and are woken through it alone (an acquire or an abandoned grant
// resets it): on a clock.Fake, both goroutines are idle exactly when both
// timers are active, which is what the keeper's unit tests wait for.
package keeper
