package etcdlock

import (
	"fmt"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/engine"
)

// Defaults and pool limits. Their effects are stated so they can be tuned
// knowingly.
const (
	// DefaultTTL is the lease TTL when Options.TTL is zero: long enough that
	// a garbage-collection pause or a slow disk on the server does not cost
	// the lock, short enough that a dead holder's lock is free again within
	// about a quarter of a minute.
	DefaultTTL = 15 * time.Second

	// DefaultPort is the client port of an etcd:// or etcds:// URL's
	// endpoint that names none.
	DefaultPort = "2379"

	// MaxIdleSessions bounds how many idle leases a Client keeps alive for
	// reuse. A lock+unlock on a pooled lease costs two round trips, as
	// concurrency.Mutex on a reused session does; a fresh lease adds a
	// Grant. Beyond this many idle leases, a lease that becomes idle is
	// revoked at once.
	MaxIdleSessions = 8

	// IdleSessionTimeout is how long an idle pooled lease is kept alive
	// (its keepalives cost one request every TTL/3) before it is revoked.
	IdleSessionTimeout = time.Minute
)

// Options configure New. The zero value means the documented defaults.
type Options struct {
	// TTL is the etcd lease TTL. etcd counts TTLs in whole seconds, so it is
	// rounded up to the next second; 0 means DefaultTTL. etcd raises a TTL
	// below its minimum (about 2s with default server timing) without
	// saying so: Client.GrantedTTL reports what the server granted. It
	// must be at most baton.MaxTTL.
	TTL time.Duration

	// TokenFloor is added to every fencing token: token = the key's create
	// revision + TokenFloor, so that tokens from a rebuilt cluster still
	// exceed every token the resources have seen. Every client of a name
	// must use the same floor; an acquire whose sum would pass 2^64 fails
	// with an error wrapping baton.ErrInvalidOption. See "Token floor" in
	// the baton package doc.
	TokenFloor uint64

	// Backoff paces retried lease grants and background cleanup. The zero
	// value uses baton's defaults.
	Backoff baton.Backoff

	// Observer, if set, is told of every acquire of the client's recipes
	// and of each lease's state changes (see baton.Observer). Nil, the
	// default, costs one comparison per acquire.
	Observer baton.Observer

	// Process is the holder record stored with every entry (see "Holder
	// record" in the package doc). The zero value records this process:
	// its host name, pid and executable name.
	Process baton.Process
}

// validate checks o and returns a copy with the defaults filled in.
func (o Options) validate() (Options, error) {
	bad := func(format string, args ...any) (Options, error) {
		return Options{}, fmt.Errorf("%w: etcdlock: "+format, append([]any{baton.ErrInvalidOption}, args...)...)
	}
	switch {
	case o.TTL < 0 || o.TTL > baton.MaxTTL:
		return bad("TTL %v, want 0…%v", o.TTL, baton.MaxTTL)
	case o.Backoff.Base < 0 || o.Backoff.Max < 0 || o.Backoff.Budget < 0:
		return bad("negative backoff duration")
	}
	if o.TTL == 0 {
		o.TTL = DefaultTTL
	}
	o.Process = engine.OrThisProcess(o.Process)
	// etcd TTLs are whole seconds: round up, never down, so the lease
	// lasts at least as long as asked.
	o.TTL = (o.TTL + time.Second - 1).Truncate(time.Second)
	return o, nil
}
