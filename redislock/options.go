package redislock

import (
	"regexp"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/engine"
	"github.com/baton-go/baton/engine/leasekit"
)

// Defaults, stated with Options' fields so they can be tuned knowingly.
const (
	defaultTTL               = leasekit.DefaultTTL // 15s
	defaultPrefix            = "baton"
	defaultReplicaAckTimeout = 500 * time.Millisecond
)

// Options configure New. The zero value means the documented defaults.
type Options struct {
	// TTL is the lease time of a key, renewed every TTL/3 by the client's
	// keeper; 0 means 15s: a dead holder's lock is free again within it.
	// Below 300ms the timing margins stop making sense and New refuses it,
	// as it refuses one above baton.MaxTTL. It must be whole milliseconds,
	// the unit of the keys' PX: New refuses 1.0005s rather than round it,
	// and any positive TTL is taken as given, never replaced by the
	// default.
	TTL time.Duration

	// Prefix starts every key and channel; "" means "baton"
	// ("baton:{orders/42}:mutex"). It must
	// match [A-Za-z0-9_.:/-]{1,64} (no braces: they would change the hash
	// tag).
	Prefix string

	// TokenFloor is added to every fencing token: a token is the slot
	// counter's value + TokenFloor, as on every engine (see the baton
	// package doc). Set it above the highest token ever handed out after a
	// failover or restore rewound the counters (see the package doc). A
	// grant whose sum would overflow uint64 is released and refused.
	TokenFloor uint64

	// ReplicaAcks > 0 makes every acquire wait, on the same connection and
	// in the same round trip, until that many replicas acknowledged the
	// grant (WAIT); fewer acknowledgements release the grant and fail the
	// acquire with ErrNotReplicated. It needs a *redis.Client (a single
	// primary, or a Sentinel failover client): on a Cluster or a Ring New
	// refuses it with baton.ErrInvalidOption.
	ReplicaAcks int

	// ReplicaAckTimeout bounds WAIT; 0 means the smaller of 500ms and
	// TTL/10. It must be below TTL/4 and
	// below the redis client's ReadTimeout (3s by default), which go-redis
	// applies to the pipeline carrying WAIT.
	ReplicaAckTimeout time.Duration

	// BatchSize is how many renewals or releases one pipeline carries; 0
	// means 500 (10 000 held leases cost 20 round trips every TTL/3). It
	// must be in 1…5000.
	BatchSize int

	// DriftMargin is subtracted from every lease deadline (see package
	// keeper); 0 means max(TTL/10, 100ms). It must stay below TTL/2.
	DriftMargin time.Duration

	// Backoff paces waiters' retries (its Max is capped at TTL/4) and
	// background releases. The zero value uses baton's defaults.
	Backoff baton.Backoff

	// Observer, if set, is told of every acquire, of each lease's state
	// changes (the keeper's Lost events carry Lead) and of the keeper's
	// renewal batches (see baton.Observer). Nil, the default, costs one
	// comparison per acquire.
	Observer baton.Observer

	// NoPubSub disables the client's pub/sub connection: waiters then wake
	// by backoff only (use it where SUBSCRIBE is not allowed).
	NoPubSub bool

	// Process is the holder record every grant stores beside its owner
	// and token (a hash field, or a member of the name's records set),
	// for Inspect and baton inspect. The zero value records this process:
	// its host name, pid and executable's name.
	Process baton.Process
}

var prefixRE = regexp.MustCompile(`^[A-Za-z0-9_.:/-]{1,64}$`)

// validate checks o and fills in the defaults: the settings every lease
// engine shares through package leasekit, then Redis' own.
func (o Options) validate() (Options, error) {
	lo, err := o.common().Validate("redislock")
	if err != nil {
		return Options{}, err
	}
	o.TTL, o.DriftMargin, o.BatchSize, o.Backoff = lo.TTL, lo.DriftMargin, lo.BatchSize, lo.Backoff
	if o.Prefix == "" {
		o.Prefix = defaultPrefix
	}
	o.Process = engine.OrThisProcess(o.Process)
	if o.ReplicaAckTimeout == 0 {
		o.ReplicaAckTimeout = min(defaultReplicaAckTimeout, o.TTL/10)
	}
	switch {
	case o.TTL%time.Millisecond != 0:
		return Options{}, leasekit.Invalid("redislock", "TTL %v, want whole milliseconds (the keys' PX)", o.TTL)
	case !prefixRE.MatchString(o.Prefix):
		return Options{}, leasekit.Invalid("redislock", "Prefix %q, want [A-Za-z0-9_.:/-]{1,64}", o.Prefix)
	case o.ReplicaAcks < 0:
		return Options{}, leasekit.Invalid("redislock", "ReplicaAcks %d, want ≥ 0", o.ReplicaAcks)
	case o.ReplicaAckTimeout < time.Millisecond || o.ReplicaAckTimeout >= o.TTL/4:
		return Options{}, leasekit.Invalid("redislock", "ReplicaAckTimeout %v, want in [1ms, TTL/4)", o.ReplicaAckTimeout)
	}
	return o, nil
}

// common is the part of o every lease engine shares.
func (o Options) common() leasekit.Options {
	return leasekit.Options{TTL: o.TTL, DriftMargin: o.DriftMargin, TokenFloor: o.TokenFloor, BatchSize: o.BatchSize, Backoff: o.Backoff, Observer: o.Observer}
}
