package baton

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/baton-go/baton/internal/bridge"
)

// Option configures Open. The defaults are each engine's documented ones.
type Option func(*bridge.Options)

// WithTTL sets the lease TTL (ZooKeeper: the session timeout; etcd: the
// lease TTL; the TTL engines: the key's or row's), between 1s and MaxTTL.
func WithTTL(d time.Duration) Option { return func(o *bridge.Options) { o.TTL = d } }

// WithTokenFloor adds floor to every token (see the package doc's Token
// floor).
func WithTokenFloor(floor uint64) Option {
	return func(o *bridge.Options) { o.TokenFloor = floor }
}

// WithConnectTimeout bounds how long Open waits for the servers (default
// 10s, and never past ctx).
func WithConnectTimeout(d time.Duration) Option {
	return func(o *bridge.Options) { o.ConnectTimeout = d }
}

// WithObserver tells o of every acquire and every lease's state changes.
func WithObserver(obs Observer) Option {
	return func(o *bridge.Options) { o.Observer = obs }
}

// WithProgram names the program in the holder record of every grant
// (default: this executable's base name).
func WithProgram(name string) Option { return func(o *bridge.Options) { o.Program = name } }

// WithLabel adds a label to the holder record of every grant. Labels are
// for operators, not secrets: they show in baton inspect and on the
// exporter page. The record is capped at MaxProcessLen bytes; labels that
// do not fit are left out.
func WithLabel(key, value string) Option {
	return func(o *bridge.Options) {
		if o.Labels == nil {
			o.Labels = map[string]string{}
		}
		o.Labels[key] = value
	}
}

// WithGetenv replaces os.Getenv where an engine reads credentials and TLS
// files from the environment (BATON_REDIS_PASSWORD, BATON_SQL_USER, …).
func WithGetenv(getenv func(string) string) Option {
	return func(o *bridge.Options) { o.Getenv = getenv }
}

// WithTLSServerName makes every TLS connection verify the server's
// certificate against name instead of the host dialled: for a client
// that reaches its servers through a proxy or tunnel on another address.
func WithTLSServerName(name string) Option {
	return func(o *bridge.Options) { o.TLSServerName = name }
}

// DefaultConnectTimeout is Open's connect timeout.
const DefaultConnectTimeout = 10 * time.Second

// engineImports names the package that registers each scheme, for the
// error of a scheme no imported engine serves.
var engineImports = map[string]string{
	"zk": "zklock", "zk+tls": "zklock",
	"etcd": "etcdlock", "etcds": "etcdlock",
	"redis": "redislock", "rediss": "redislock",
	"redlock":  "redlock",
	"postgres": "sqllock", "postgresql": "sqllock", "mysql": "sqllock", "sqlite": "sqllock",
	"mem": "memlock",
}

// Open connects to the engine a URL names, the way database/sql.Open
// finds a driver: the engine registers its schemes when its package is
// imported (import _ "github.com/baton-go/baton/redislock"). The URLs
// are the CLI's --backend URLs: zk://h1:2181,h2:2181/chroot, zk+tls://,
// etcd://h:2379, etcds://, redis://h:6379/0, rediss://,
// redlock://h1,h2,h3, postgres://…,
// mysql://…, sqlite:///path/file.db, and mem://name (an in-process
// memlock server, for tests). Credentials come from the URL or, when it
// has none, from the engine's environment variables. Errors never show
// a password; a bad URL's error wraps ErrInvalidOption, an unreachable
// server's ErrUnavailable, a refused login or certificate's ErrAuth.
func Open(ctx context.Context, url string, opts ...Option) (*Client, error) {
	d, o, err := driverOf(url, opts)
	if err != nil {
		return nil, err
	}
	c, engine, err := d.Open(ctx, url, o)
	if err != nil {
		return nil, err
	}
	return bridge.NewClient(c, engine).(*Client), nil
}

// CheckURL checks url and opts as Open would, without connecting: a
// configuration mistake shows at startup, not at the first connect.
func CheckURL(url string, opts ...Option) error {
	d, o, err := driverOf(url, opts)
	if err != nil {
		return err
	}
	return d.Check(url, o)
}

// driverOf finds url's engine and collects opts.
func driverOf(url string, opts []Option) (bridge.Driver, *bridge.Options, error) {
	scheme, _, ok := strings.Cut(url, "://")
	scheme = strings.ToLower(scheme)
	if !ok || scheme == "" {
		return bridge.Driver{}, nil, fmt.Errorf("%w: baton.Open: want scheme://… (%s)", ErrInvalidOption, schemes())
	}
	o := &bridge.Options{ConnectTimeout: DefaultConnectTimeout, Getenv: os.Getenv}
	for _, f := range opts {
		f(o)
	}
	if err := checkOptions(o); err != nil {
		return bridge.Driver{}, nil, err
	}
	d, ok := bridge.Lookup(scheme)
	if !ok {
		if pkg := engineImports[scheme]; pkg != "" {
			return d, nil, fmt.Errorf("%w: baton.Open: no engine registered for %s://: add import _ \"github.com/baton-go/baton/%s\"", ErrInvalidOption, scheme, pkg)
		}
		return d, nil, fmt.Errorf("%w: baton.Open: unknown scheme %q (%s)", ErrInvalidOption, scheme, schemes())
	}
	return d, o, nil
}

// checkOptions validates Open's options, in one place.
func checkOptions(o *bridge.Options) error {
	switch {
	case o.TTL < 0 || o.TTL > MaxTTL:
		return fmt.Errorf("%w: baton.Open: TTL %v outside 0 (the engine's default) to %v", ErrInvalidOption, o.TTL, MaxTTL)
	case o.ConnectTimeout <= 0:
		return fmt.Errorf("%w: baton.Open: connect timeout %v, want > 0", ErrInvalidOption, o.ConnectTimeout)
	case o.Getenv == nil:
		return fmt.Errorf("%w: baton.Open: nil Getenv", ErrInvalidOption)
	}
	return nil
}

// schemes lists the registered schemes, for messages.
func schemes() string {
	s := bridge.Schemes()
	if len(s) == 0 {
		return "no engine is imported"
	}
	slices.Sort(s)
	return strings.Join(s, "://, ") + "://"
}
