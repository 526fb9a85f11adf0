package obsview

import (
	"context"
	"errors"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/engine/leasekit/keeper"
)

// Result classifies how an acquire ended, for the result label. The order
// matters: an unavailable backend is reported beside the context error, and
// authentication failures beside unavailability, so the specific sentinel
// is tested first.
func Result(err error) string {
	switch {
	case err == nil:
		return "granted"
	case errors.Is(err, baton.ErrNotAcquired):
		return "not_acquired"
	case errors.Is(err, baton.ErrSessionLost):
		return "session_lost"
	case errors.Is(err, baton.ErrLost):
		return "lost" // re-entering a lease that was lost
	case errors.Is(err, baton.ErrAuth):
		return "auth"
	case errors.Is(err, baton.ErrUnavailable):
		return "unavailable"
	case errors.Is(err, baton.ErrClosed):
		return "closed"
	case errors.Is(err, baton.ErrUpgradeRefused):
		return "refused"
	case errors.Is(err, baton.ErrInvalidName), errors.Is(err, baton.ErrInvalidOption):
		return "invalid"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "cancelled"
	}
	return "error"
}

// Cause classifies why a lease was lost, for the cause label.
func Cause(err error) string {
	switch {
	case errors.Is(err, keeper.ErrDeadline):
		return "deadline" // no renewal confirmed in time
	case errors.Is(err, keeper.ErrGone):
		return "gone" // the server has it expired or taken
	case errors.Is(err, keeper.ErrFixedExpired):
		return "expired" // a fixed lease time ran out
	case errors.Is(err, baton.ErrSessionLost):
		return "session_expired"
	case errors.Is(err, baton.ErrClosed):
		return "closed"
	}
	return "other"
}

// Renewal classifies one keeper round.
func Renewal(e baton.Event) string {
	switch {
	case e.Err != nil:
		return "error"
	case e.Late:
		return "late"
	}
	return "ok"
}

// IdemOutcome keeps an idempotency event's Outcome label within the values
// baton documents (IdemOutcomes), so a future value cannot grow the series
// without bound.
func IdemOutcome(s string) string { return outcome(s, IdemOutcomes) }

// TaskOutcome is IdemOutcome for durable task events (TaskOutcomes).
func TaskOutcome(s string) string { return outcome(s, TaskOutcomes) }

func outcome(s string, known []string) string {
	for _, k := range known {
		if s == k {
			return s
		}
	}
	return "other"
}

// The label values each classifier can return, so that adapters can show
// every series at 0 before its first event (a counter that first appears
// at 1 is invisible to increase() and rate()). Callers must not modify
// them.
var (
	Results        = []string{"granted", "not_acquired", "session_lost", "lost", "auth", "unavailable", "closed", "refused", "invalid", "timeout", "cancelled", "error"}
	Causes         = []string{"deadline", "gone", "expired", "session_expired", "closed", "other"}
	RenewalResults = []string{"ok", "late", "error"}
	// IdemOutcomes are baton.EventIdempotency's outcomes and "other".
	IdemOutcomes = []string{"hit", "requesting", "success", "failed", "unknown", "settled", "manual", "conflict", "resolved", "other"}
	// TaskOutcomes are baton.EventTask's outcomes and "other".
	TaskOutcomes = []string{"claimed", "takeover", "checkpoint", "completed", "failed", "retry", "stale", "lost", "other"}
	// Recipes are Event.Recipe's values.
	Recipes = []string{"mutex", "read", "write", "semaphore", "election"}
)

// Renews reports whether engine renews its leases through the keeper and
// so reports EventRenewal; Recovers whether it reports EventRecovered.
func Renews(engine string) bool {
	switch engine {
	case "redis", "redlock", "postgres", "mysql", "sqlite":
		return true
	}
	return false
}

// Recovers: see Renews.
func Recovers(engine string) bool { return engine == "zk" || engine == "mem" }
