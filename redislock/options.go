package redislock

import (
	"fmt"
	"regexp"
	"time"

	"github.com/baton-go/baton"
)

// Defaults. Their effects are stated so they can be tuned knowingly.
const (
	// DefaultTTL is the renewed lease time of a key: a dead holder's lock
	// is free again within it, and a live holder renews every TTL/3.
	DefaultTTL = 15 * time.Second

	// DefaultPrefix starts every key and channel: "baton:{name}:mutex".
	DefaultPrefix = "baton"

	// DefaultBatchSize is how many renewals one pipeline carries: 10 000
	// held leases cost 20 round trips every TTL/3.
	DefaultBatchSize = 500

	// DefaultReplicaAckTimeout is how long WAIT waits for the replicas
	// when Options.ReplicaAcks > 0.
	DefaultReplicaAckTimeout = 500 * time.Millisecond
)

// Options configure New. The zero value means the documented defaults.
type Options struct {
	// TTL is the lease time of a key, renewed every TTL/3 by the client's
	// keeper; 0 means DefaultTTL. Below 300ms the timing margins stop
	// making sense and New refuses it.
	TTL time.Duration

	// Prefix starts every key and channel; "" means DefaultPrefix. It must
	// match [A-Za-z0-9_.:/-]{1,64} (no braces: they would change the hash
	// tag).
	Prefix string

	// TokenFloor is the lowest value a token counter may hold before it
	// mints: every acquire script first raises its counter to TokenFloor
	// if it is lower. Set it above the highest token ever handed out after
	// a failover or restore rewound the counters (see the package doc).
	TokenFloor uint64

	// ReplicaAcks > 0 makes every acquire wait, on the same connection and
	// in the same round trip, until that many replicas acknowledged the
	// grant (WAIT); fewer acknowledgements release the grant and fail the
	// acquire with ErrNotReplicated. It needs a *redis.Client (a single
	// primary, or a Sentinel failover client): on a Cluster or a Ring New
	// refuses it with baton.ErrInvalidOption.
	ReplicaAcks int

	// ReplicaAckTimeout bounds WAIT; 0 means the smaller of
	// DefaultReplicaAckTimeout and TTL/10. It must be below TTL/4 and
	// below the redis client's ReadTimeout (3s by default), which go-redis
	// applies to the pipeline carrying WAIT.
	ReplicaAckTimeout time.Duration

	// BatchSize is how many renewals or releases one pipeline carries; 0
	// means DefaultBatchSize.
	BatchSize int

	// DriftMargin is subtracted from every lease deadline (see package
	// keeper); 0 means max(TTL/10, 100ms).
	DriftMargin time.Duration

	// Backoff paces waiters' retries (its Max is capped at TTL/4) and
	// background releases. The zero value uses baton's defaults.
	Backoff baton.Backoff

	// NoPubSub disables the client's pub/sub connection: waiters then wake
	// by backoff only (use it where SUBSCRIBE is not allowed).
	NoPubSub bool
}

var prefixRE = regexp.MustCompile(`^[A-Za-z0-9_.:/-]{1,64}$`)

// validate checks o and fills in the defaults.
func (o Options) validate() (Options, error) {
	bad := func(format string, args ...any) (Options, error) {
		return Options{}, fmt.Errorf("%w: redislock: "+format, append([]any{baton.ErrInvalidOption}, args...)...)
	}
	if o.TTL == 0 {
		o.TTL = DefaultTTL
	}
	if o.Prefix == "" {
		o.Prefix = DefaultPrefix
	}
	if o.BatchSize == 0 {
		o.BatchSize = DefaultBatchSize
	}
	if o.ReplicaAckTimeout == 0 {
		o.ReplicaAckTimeout = min(DefaultReplicaAckTimeout, o.TTL/10)
	}
	switch {
	case o.TTL < 300*time.Millisecond:
		return bad("TTL %v, want ≥ 300ms", o.TTL)
	case o.TTL%time.Millisecond != 0:
		return bad("TTL %v, want whole milliseconds", o.TTL)
	case o.DriftMargin < 0 || o.DriftMargin >= o.TTL/2:
		return bad("DriftMargin %v, want in [0, TTL/2)", o.DriftMargin)
	case !prefixRE.MatchString(o.Prefix):
		return bad("Prefix %q, want [A-Za-z0-9_.:/-]{1,64}", o.Prefix)
	case o.BatchSize < 1 || o.BatchSize > 5000:
		return bad("BatchSize %d, want 1…5000", o.BatchSize)
	case o.ReplicaAcks < 0:
		return bad("ReplicaAcks %d, want ≥ 0", o.ReplicaAcks)
	case o.ReplicaAckTimeout < time.Millisecond || o.ReplicaAckTimeout >= o.TTL/4:
		return bad("ReplicaAckTimeout %v, want in [1ms, TTL/4)", o.ReplicaAckTimeout)
	case o.TokenFloor > 1<<53:
		return bad("TokenFloor %d, want ≤ 2^53 (Lua numbers are doubles)", o.TokenFloor)
	case o.Backoff.Base < 0 || o.Backoff.Max < 0 || o.Backoff.Budget < 0:
		return bad("negative backoff duration")
	}
	maxWait := o.Backoff.Max
	if maxWait == 0 {
		maxWait = baton.DefaultBackoffMax
	}
	o.Backoff.Max = min(maxWait, o.TTL/4)
	return o, nil
}
