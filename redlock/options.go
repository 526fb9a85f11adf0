package redlock

import (
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/engine"
	"github.com/baton-go/baton/engine/leasekit"
)

// Defaults, stated with Options' fields so they can be tuned knowingly.
const (
	defaultTTL         = leasekit.DefaultTTL // 15s
	defaultPrefix      = "baton:redlock:"
	defaultDriftFactor = 0.01 // the Redlock specification's
	// driftFixed is the constant part of the drift allowance (the Redlock
	// specification's 2 ms for the granularity of Redis' expiry).
	driftFixed = 2 * time.Millisecond
	// minNodes is the fewest nodes a Client accepts: with two, a majority
	// is both and one node down stops everything.
	minNodes = 3
)

// Options configure New. The zero value means the documented defaults.
type Options struct {
	// TTL is the lease time of the lock key on each node; 0 means 15s: a
	// dead holder's lock is free again within it, and a live holder
	// extends it every TTL/3. Below 300ms the timing margins stop making
	// sense and New refuses it, as it refuses one above baton.MaxTTL. It
	// must be whole milliseconds, the unit of the key's PX: New refuses
	// 1.0005s rather than round it, since a key that lives shorter than
	// the client believes breaks the validity it computes, and any
	// positive TTL is taken as given, never replaced by the default.
	TTL time.Duration

	// Prefix prefixes every key on the nodes: the node's index
	// (<prefix>index), its token counter (<prefix>counter) and the lock
	// keys (<prefix>lock:<name>). Clients with different prefixes are
	// independent deployments on the same servers. "" means
	// "baton:redlock:".
	Prefix string

	// NodeTimeout bounds each request to one node; it must be far below
	// the TTL, so that a dead node costs an acquire a small part of the
	// lock's validity. 0 means max(TTL/30, 50ms) (500ms for the default
	// TTL). It must be at most TTL/4.
	NodeTimeout time.Duration

	// DriftFactor is the fraction of the TTL allowed for clock-rate drift
	// between this host and the nodes; 0 means 0.01, the Redlock
	// specification's. The drift, TTL·DriftFactor + 2ms (the
	// specification's allowance for the granularity of Redis' expiry), is
	// subtracted from the validity of every grant and added to the
	// keeper's DriftMargin.
	DriftFactor float64

	// DriftMargin is the keeper's margin before a lease's deadline (see
	// package keeper), to which the Redlock drift is added; 0 means
	// max(TTL/10, 100ms). The sum must stay below TTL/2.
	DriftMargin time.Duration

	// TokenFloor is added to every fencing token: a token is the quorum
	// token + TokenFloor (see the baton package doc and "Recovery" in this
	// package's doc). A grant whose sum would overflow uint64 is released
	// and refused.
	TokenFloor uint64

	// BatchSize is how many leases one renewal or release script covers
	// on each node; 0 means 500 (10 000 held leases cost 20 scripts per
	// node every TTL/3). It must be in 1…5000.
	BatchSize int

	// Backoff paces waiters' retries after split votes and failures (its
	// Max is capped at TTL/4), spaces their safety-net polls (Max/2 per
	// waiter, see wakeone.go) and paces background releases. The zero
	// value uses baton's defaults. Full jitter matters here more than
	// anywhere: waiters that retry together split the nodes' votes and
	// nobody wins a majority.
	Backoff baton.Backoff

	// Observer, if set, is told of every acquire, of each lease's state
	// changes (the keeper's Lost events carry Lead) and of the keeper's
	// renewal batches (see baton.Observer). Nil, the default, costs one
	// comparison per acquire.
	Observer baton.Observer

	// Process is the holder record every grant stores in the lock key on
	// each node, beside owner and token, for Inspect and baton inspect.
	// The zero value records this process: its host name, pid and
	// executable's name.
	Process baton.Process
}

// validate checks o and fills in the defaults: the settings every lease
// engine shares through package leasekit, then Redlock's own.
func (o Options) validate() (Options, error) {
	lo, err := o.common().Validate("redlock")
	if err != nil {
		return Options{}, err
	}
	o.TTL, o.DriftMargin, o.BatchSize, o.Backoff = lo.TTL, lo.DriftMargin, lo.BatchSize, lo.Backoff
	if o.Prefix == "" {
		o.Prefix = defaultPrefix
	}
	o.Process = engine.OrThisProcess(o.Process)
	if o.NodeTimeout == 0 {
		o.NodeTimeout = max(o.TTL/30, 50*time.Millisecond)
	}
	if o.DriftFactor == 0 {
		o.DriftFactor = defaultDriftFactor
	}
	switch {
	case o.TTL%time.Millisecond != 0:
		return Options{}, leasekit.Invalid("redlock", "TTL %v, want whole milliseconds (the keys' PX)", o.TTL)
	case o.NodeTimeout < 0 || o.NodeTimeout > o.TTL/4:
		return Options{}, leasekit.Invalid("redlock", "NodeTimeout %v, want in (0, TTL/4 = %v]", o.NodeTimeout, o.TTL/4)
	case o.DriftFactor < 0 || o.DriftFactor >= 0.1:
		return Options{}, leasekit.Invalid("redlock", "DriftFactor %v, want in [0, 0.1)", o.DriftFactor)
	}
	if m := o.DriftMargin + o.drift(); m >= o.TTL/2 {
		return Options{}, leasekit.Invalid("redlock", "DriftMargin %v + drift %v = %v, want < TTL/2 = %v", o.DriftMargin, o.drift(), m, o.TTL/2)
	}
	return o, nil
}

// common is the part of o every lease engine shares.
func (o Options) common() leasekit.Options {
	return leasekit.Options{TTL: o.TTL, DriftMargin: o.DriftMargin, TokenFloor: o.TokenFloor, BatchSize: o.BatchSize, Backoff: o.Backoff, Observer: o.Observer}
}

// drift is the Redlock clock-drift allowance: TTL·DriftFactor + 2ms.
func (o Options) drift() time.Duration {
	return time.Duration(float64(o.TTL)*o.DriftFactor) + driftFixed
}

// acquireBudget is the overall deadline of one acquire attempt, both
// phases: 0.8·TTL. Past it the validity left would be too
// small to be worth a grant.
func (o Options) acquireBudget() time.Duration { return o.TTL * 4 / 5 }
