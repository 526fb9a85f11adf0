package sqllock

import (
	"regexp"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/engine/leasekit"
	"github.com/baton-go/baton/fence"
)

// Defaults. Their effects are stated so they can be tuned knowingly.
const (
	// DefaultTTL is the lease time of a row: a dead holder's lock is free
	// again within it, and a live holder renews every TTL/3.
	DefaultTTL = leasekit.DefaultTTL

	// DefaultTablePrefix prefixes the table (and sequence) names.
	DefaultTablePrefix = "baton_"
)

// Options configure New. The zero value means the documented defaults.
type Options struct {
	// Dialect is the SQL flavour; zero recognises it from the driver
	// (fence.DialectOf).
	Dialect fence.Dialect

	// TTL is the lease time of a row; 0 means DefaultTTL. Below 300ms the
	// timing margins stop making sense and New refuses it.
	TTL time.Duration

	// DriftMargin is subtracted from every lease deadline (see package
	// keeper); 0 means max(TTL/10, 100ms). It must stay below TTL/2.
	DriftMargin time.Duration

	// TokenFloor is added to every fencing token: a token is the
	// sequence's value + TokenFloor (see the baton package doc). A grant
	// whose sum would overflow uint64 is released and refused.
	TokenFloor uint64

	// TablePrefix prefixes the names of the schema objects: <prefix>locks,
	// <prefix>tokens (MySQL, SQLite; retired on MariaDB),
	// <prefix>token_seq (PostgreSQL, MariaDB). It
	// must match [a-z_][a-z0-9_]{0,39}; "" means DefaultTablePrefix.
	TablePrefix string

	// BatchSize is how many leases one renewal or release statement covers;
	// 0 means 500 (leasekit.DefaultBatchSize): 10 000 held leases cost 20
	// statements every TTL/3. It must be in 1…5000.
	BatchSize int

	// Backoff paces waiters' retries (its Max is capped at TTL/4) and
	// background releases. The zero value uses baton's defaults.
	Backoff baton.Backoff

	// Observer, if set, is told of every acquire, of each lease's state
	// changes (the keeper's Lost events carry Lead) and of the keeper's
	// renewal batches (see baton.Observer). Nil, the default, costs one
	// comparison per acquire.
	Observer baton.Observer

	// NoMigrate skips the schema creation a client runs at its first use:
	// it then never runs DDL, and only checks that the table exists with
	// the columns it needs, failing with an error that says to run Migrate
	// (for example from a deployment step with DDL rights) when not.
	NoMigrate bool

	// NoListen disables the PostgreSQL LISTEN connection; waiters then
	// wake by backoff only.
	NoListen bool

	// Process is the holder record stored with every grant and waiter's
	// row (its holder column), which Inspect and baton inspect show; the
	// zero value records this process (its host name, pid and executable).
	// It is encoded once, by New.
	Process baton.Process
}

var prefixRE = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,39}$`)

// validate checks o and fills in the defaults: the settings every lease
// engine shares through package leasekit, then the table prefix.
func (o Options) validate() (Options, error) {
	lo, err := o.common().Validate("sqllock")
	if err != nil {
		return Options{}, err
	}
	o.TTL, o.DriftMargin, o.BatchSize, o.Backoff = lo.TTL, lo.DriftMargin, lo.BatchSize, lo.Backoff
	if o.TablePrefix == "" {
		o.TablePrefix = DefaultTablePrefix
	}
	if !prefixRE.MatchString(o.TablePrefix) {
		return Options{}, leasekit.Invalid("sqllock", "TablePrefix %q, want [a-z_][a-z0-9_]{0,39}", o.TablePrefix)
	}
	return o, nil
}

// common is the part of o every lease engine shares.
func (o Options) common() leasekit.Options {
	return leasekit.Options{TTL: o.TTL, DriftMargin: o.DriftMargin, TokenFloor: o.TokenFloor, BatchSize: o.BatchSize, Backoff: o.Backoff, Observer: o.Observer}
}
