package kubelock

import (
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/engine"
	"github.com/baton-go/baton/engine/leasekit"
)

// Defaults. Their effects are stated so they can be tuned knowingly.
const (
	// DefaultTTL is the lease time of a grant: a dead holder's lock is
	// free again about DefaultTTL after the others last saw it renewed,
	// and a live holder renews every TTL/3. It is client-go's default
	// LeaseDuration too.
	DefaultTTL = leasekit.DefaultTTL

	// DefaultBatchSize is how many renewals one keeper round hands the
	// store at once. Kubernetes has no batch write: the store renews the
	// Leases of a batch with up to Parallel requests in flight.
	DefaultBatchSize = leasekit.DefaultBatchSize

	// DefaultParallel is how many Leases the keeper renews or releases at
	// once.
	DefaultParallel = 8
)

// Options configure New. The zero value means the documented defaults.
type Options struct {
	// TTL is the lease time of a grant, renewed every TTL/3 by the
	// client's keeper; 0 means DefaultTTL. It must be in 300ms…
	// baton.MaxTTL and whole milliseconds (the state annotation's unit);
	// the Lease's leaseDurationSeconds is the TTL rounded up to whole
	// seconds, plus one (see the package doc), so that client-go never
	// takes over a lease baton still holds.
	TTL time.Duration

	// TokenFloor is added to every fencing token: a token is the name's
	// counter (the baton.dev/token annotation) + TokenFloor, as on every
	// engine. Raise it above every token issued if a Lease was deleted
	// (its counter restarts at 0). A grant whose sum would overflow
	// uint64 is released and refused.
	TokenFloor uint64

	// BatchSize is how many leases one keeper round hands the store at
	// once; 0 means DefaultBatchSize. It must be in 1…5000.
	BatchSize int

	// Parallel is how many Leases are renewed or released at once; 0
	// means DefaultParallel. It must be in 1…64. The keeper makes two
	// requests (a read and a conditional update) per held Lease every
	// TTL/3: give the clientset's rate limiter room for them (baton.Open
	// turns client-go's limiter off, and asks for protobuf, which every
	// watcher of a busy name decodes faster than JSON).
	Parallel int

	// DriftMargin is subtracted from every lease deadline (see package
	// keeper); 0 means max(TTL/10, 100ms). It must stay below TTL/2.
	DriftMargin time.Duration

	// Backoff paces waiters' retries (its Max is capped at TTL/4) and
	// background releases. The zero value uses baton's defaults.
	Backoff baton.Backoff

	// Observer, if set, is told of every acquire, of each lease's state
	// changes and of the keeper's renewal batches. Nil costs one
	// comparison per acquire.
	Observer baton.Observer

	// Process is the holder record every grant stores in the state
	// annotation, for Inspect and baton inspect. The zero value records
	// this process: its host name, pid and executable's name.
	Process baton.Process
}

// validate checks o and fills in the defaults: the settings every lease
// engine shares through package leasekit, then this engine's own.
func (o Options) validate() (Options, error) {
	lo, err := o.common().Validate("kubelock")
	if err != nil {
		return Options{}, err
	}
	o.TTL, o.DriftMargin, o.BatchSize, o.Backoff = lo.TTL, lo.DriftMargin, lo.BatchSize, lo.Backoff
	if o.Parallel == 0 {
		o.Parallel = DefaultParallel
	}
	o.Process = engine.OrThisProcess(o.Process)
	switch {
	case o.TTL%time.Millisecond != 0:
		return Options{}, leasekit.Invalid("kubelock", "TTL %v, want whole milliseconds", o.TTL)
	case o.Parallel < 1 || o.Parallel > 64:
		return Options{}, leasekit.Invalid("kubelock", "Parallel %d, want 1…64", o.Parallel)
	}
	return o, nil
}

// common is the part of o every lease engine shares.
func (o Options) common() leasekit.Options {
	return leasekit.Options{TTL: o.TTL, DriftMargin: o.DriftMargin, TokenFloor: o.TokenFloor, BatchSize: o.BatchSize, Backoff: o.Backoff, Observer: o.Observer}
}
