package sqllock

import (
	"fmt"
	"regexp"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/fence"
)

// Defaults. Their effects are stated so they can be tuned knowingly.
const (
	// DefaultTTL is the lease time of a row: a dead holder's lock is free
	// again within it, and a live holder renews every TTL/3.
	DefaultTTL = 15 * time.Second

	// DefaultTablePrefix prefixes the table (and sequence) names.
	DefaultTablePrefix = "baton_"

	// DefaultBatchSize is how many held leases one renewal statement
	// covers: 10 000 held leases cost 20 statements every TTL/3.
	DefaultBatchSize = 500
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
	// keeper); 0 means max(TTL/10, 100ms).
	DriftMargin time.Duration

	// TokenFloor is added to every fencing token; see the baton package
	// doc.
	TokenFloor uint64

	// TablePrefix prefixes the names of the schema objects: <prefix>locks,
	// <prefix>tokens (MySQL, SQLite), <prefix>token_seq (PostgreSQL). It
	// must match [a-z_][a-z0-9_]{0,39}; "" means DefaultTablePrefix.
	TablePrefix string

	// BatchSize is how many leases one renewal or release statement covers;
	// 0 means DefaultBatchSize.
	BatchSize int

	// Backoff paces waiters' retries (its Max is capped at TTL/4) and
	// background releases. The zero value uses baton's defaults.
	Backoff baton.Backoff

	// NoMigrate skips the schema creation a client runs at its first use:
	// it then never runs DDL, and only checks that the table exists with
	// the columns it needs, failing with an error that says to run Migrate
	// (for example from a deployment step with DDL rights) when not.
	NoMigrate bool

	// NoListen disables the PostgreSQL LISTEN connection; waiters then
	// wake by backoff only.
	NoListen bool
}

var prefixRE = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,39}$`)

// validate checks o and fills in the defaults.
func (o Options) validate() (Options, error) {
	bad := func(format string, args ...any) (Options, error) {
		return Options{}, fmt.Errorf("%w: sqllock: "+format, append([]any{baton.ErrInvalidOption}, args...)...)
	}
	if o.TTL == 0 {
		o.TTL = DefaultTTL
	}
	if o.TablePrefix == "" {
		o.TablePrefix = DefaultTablePrefix
	}
	if o.BatchSize == 0 {
		o.BatchSize = DefaultBatchSize
	}
	switch {
	case o.TTL < 300*time.Millisecond:
		return bad("TTL %v, want ≥ 300ms", o.TTL)
	case o.DriftMargin < 0 || o.DriftMargin >= o.TTL/2:
		return bad("DriftMargin %v, want in [0, TTL/2)", o.DriftMargin)
	case !prefixRE.MatchString(o.TablePrefix):
		return bad("TablePrefix %q, want [a-z_][a-z0-9_]{0,39}", o.TablePrefix)
	case o.BatchSize < 1 || o.BatchSize > 5000:
		return bad("BatchSize %d, want 1…5000", o.BatchSize)
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
