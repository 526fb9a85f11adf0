package leasekit

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/baton-go/baton"
)

// Defaults shared by every lease engine. Their effects are stated so they
// can be tuned knowingly.
const (
	// DefaultTTL is the lease time on the server: a dead holder's lock is
	// free again within it, and a live holder renews every TTL/3.
	DefaultTTL = 15 * time.Second

	// MinTTL is the shortest TTL (and fixed lease time) accepted: below
	// it the keeper's margins (TTL/3 renewals, TTL/10 drift) stop making
	// sense.
	MinTTL = 300 * time.Millisecond

	// DefaultBatchSize is how many held leases one renewal or release
	// round trip covers: 10 000 held leases cost 20 round trips every
	// TTL/3.
	DefaultBatchSize = 500

	// MaxBatchSize bounds BatchSize: a larger batch makes one statement or
	// pipeline so long that a renewal round risks running past TTL/6.
	MaxBatchSize = 5000
)

// Options are the settings every lease engine shares. Each engine's own
// Options struct carries these fields under the same names and passes
// them through Validate, so the defaults and the rules are written once.
type Options struct {
	// TTL is the lease time on the server; 0 means DefaultTTL. It must be
	// in MinTTL…baton.MaxTTL.
	TTL time.Duration

	// DriftMargin is subtracted from every lease deadline (see package
	// keeper); 0 means max(TTL/10, 100ms). It must stay below TTL/2.
	DriftMargin time.Duration

	// TokenFloor is added to every fencing token the engine mints: tokens
	// are raw + TokenFloor on every engine (see the baton package doc). A
	// grant whose sum would overflow uint64 is released and refused.
	TokenFloor uint64

	// BatchSize is how many leases one renewal or release round trip
	// covers; 0 means DefaultBatchSize. It must be in 1…MaxBatchSize.
	BatchSize int

	// Backoff paces waiters' retries and the keeper's background work.
	// Its Max is capped at TTL/4, so that a waiter retries (and refreshes
	// what it keeps on the server) well within a TTL.
	Backoff baton.Backoff

	// Observer, if set, is told of every acquire (started, each refused or
	// failed attempt, granted or failed), of each lease's state changes,
	// and of the keeper's renewal batches; the keeper's Lost events carry
	// Lead. Nil (the default) costs one comparison per acquire.
	Observer baton.Observer
}

// Validate checks o and returns it with the defaults filled in. Errors
// wrap baton.ErrInvalidOption and name pkg ("sqllock", "redislock", …).
func (o Options) Validate(pkg string) (Options, error) {
	if o.TTL == 0 {
		o.TTL = DefaultTTL
	}
	if o.DriftMargin == 0 {
		o.DriftMargin = max(o.TTL/10, 100*time.Millisecond)
	}
	if o.BatchSize == 0 {
		o.BatchSize = DefaultBatchSize
	}
	switch {
	case o.TTL < MinTTL || o.TTL > baton.MaxTTL:
		return Options{}, Invalid(pkg, "TTL %v, want %v…%v", o.TTL, MinTTL, baton.MaxTTL)
	case o.DriftMargin < 0 || o.DriftMargin >= o.TTL/2:
		return Options{}, Invalid(pkg, "DriftMargin %v, want in [0, TTL/2)", o.DriftMargin)
	case o.BatchSize < 1 || o.BatchSize > MaxBatchSize:
		return Options{}, Invalid(pkg, "BatchSize %d, want 1…%d", o.BatchSize, MaxBatchSize)
	case o.Backoff.Base < 0 || o.Backoff.Max < 0 || o.Backoff.Budget < 0:
		return Options{}, Invalid(pkg, "negative backoff duration")
	}
	maxWait := o.Backoff.Max
	if maxWait == 0 {
		maxWait = baton.DefaultBackoffMax
	}
	o.Backoff.Max = min(maxWait, o.TTL/4)
	return o, nil
}

// Invalid returns an error wrapping baton.ErrInvalidOption, prefixed with
// pkg.
func Invalid(pkg, format string, args ...any) error {
	return fmt.Errorf("%w: %s: "+format, append([]any{baton.ErrInvalidOption, pkg}, args...)...)
}

// checkLeaseTime checks a fixed lease time (LockFor): MinTTL…baton.MaxTTL,
// and whole milliseconds when millis (Redis' PX).
func checkLeaseTime(pkg string, d time.Duration, millis bool) error {
	if d < MinTTL || d > baton.MaxTTL || millis && d%time.Millisecond != 0 {
		unit := ""
		if millis {
			unit = " in whole milliseconds"
		}
		return Invalid(pkg, "lease time %v, want %v…%v%s", d, MinTTL, baton.MaxTTL, unit)
	}
	return nil
}

// Token returns raw + floor, the fencing token of a grant whose engine
// minted raw. ok is false when the sum would overflow uint64: a token
// that wrapped to a small value would be rejected as stale everywhere, or
// worse, accepted below an earlier one.
func Token(raw, floor uint64) (token uint64, ok bool) {
	if raw > math.MaxUint64-floor {
		return 0, false
	}
	return raw + floor, true
}

// PollFloor is the least time before the next poll of one of n waiters of
// a lock that a release wakes one at a time (Result.Poll): n × Max/2 of
// backoff b, capped at ttl/2 (below the waiter's intent's expiry and the
// acquire's TTL bound), jittered over its upper half, so that the waiters
// together poll about once per Max/2 whatever their number; 0 for a lone
// waiter, which keeps its backoff. b and ttl are validated Options (Max
// set, at most TTL/4).
func PollFloor(n int64, b baton.Backoff, ttl time.Duration) time.Duration {
	if n <= 1 {
		return 0
	}
	base := b.Max / 2
	d := ttl / 2
	if base > 0 && n < int64(d/base) {
		d = time.Duration(n) * base
	}
	return d/2 + rand.N(d/2+1)
}
