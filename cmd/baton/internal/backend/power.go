package backend

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/cmd/baton/internal/cli"
)

// power is what the CLI does for one engine beyond baton.Open and the
// engine-agnostic code of this package. Every field is optional: an
// engine the CLI needs nothing more of has no row in powers.
type power struct {
	// checkHold checks a run or elect command line (cmd) offline for
	// what the engine cannot do.
	checkHold func(cmd string, cfg *Config, mode Mode) error
	// noClean is the usage error of `baton clean`: the engine leaves
	// nothing behind for it to remove.
	noClean func(u URL) error
	// before runs before the connect (warnings, file checks); the
	// options it returns override the common ones.
	before func(d *dial) ([]baton.Option, error)
	// openErr words a failed connect, instead of dial.openErr.
	openErr func(d *dial, err error) error
	// opened completes b once connected (probes, notes).
	opened func(d *dial, b *Backend) error
	// refused tells an acquire's refusal by its text (a server that
	// accepts the connection and refuses only the lock's own keys): it
	// is marked baton.ErrAuth, exit 77, not 69.
	refused func(msg string) bool
	// passwordEnv is the variable the engine takes its password from when
	// the URL has none, scrubbed from its connect errors.
	passwordEnv string
	// hosts finds the servers of a URL that names none (DialHosts).
	hosts func(u URL) ([]string, error)
}

// powers are the engines' powers by scheme. A table, not a registry:
// read only, and whole here.
var powers = map[string]power{
	"zk": zkPower, "zk+tls": zkPower,
	"etcd": etcdPower, "etcds": etcdPower,
	"redis": redisPower, "rediss": redisPower,
	"redlock":  redlockPower,
	"k8s":      kubePower,
	"postgres": sqlPower, "postgresql": sqlPower, "mysql": sqlPower, "sqlite": sqlPower,
}

// dial is one Open under way, as the powers see it.
type dial struct {
	ctx context.Context // the command's: signals end it
	// connect is ctx bounded by --connect-timeout, from the connect on.
	connect context.Context
	env     *cli.Env
	cfg     *Config
	u       URL
	name    string // the lock the command is about
	pw      power
}

// options are baton.Open's options for the dial, the same on every
// engine: --ttl, --connect-timeout, the run's observer, the TLS server
// name, and the holder record's program (COMMAND's base name alone: its
// arguments and environment may hold secrets, and never go into a
// record that every inspect shows; without COMMAND, baton's own name).
// The engines take the URL's credentials and TLS files from the URL and
// the environment. The embedded default's file is made private first.
func (d *dial) options() ([]baton.Option, error) {
	opts := []baton.Option{baton.WithTTL(d.cfg.TTL), baton.WithConnectTimeout(d.cfg.ConnectTimeout),
		baton.WithObserver(d.cfg.Observer), baton.WithTLSServerName(d.u.TLSName)}
	if d.cfg.Program != "" {
		opts = append(opts, baton.WithProgram(filepath.Base(d.cfg.Program)))
	}
	if d.cfg.Embedded {
		// Private: lock names tell what the user runs, and whoever can
		// write the file can take or release any of the locks.
		if err := secureEmbedded(d.env, localPath(d.u)); err != nil {
			return nil, fmt.Errorf("%w: embedded backend: %w", baton.ErrUnavailable, err)
		}
	}
	if d.pw.before == nil {
		return opts, nil
	}
	more, err := d.pw.before(d)
	return append(opts, more...), err // the later option wins
}

// openErr is a failed connect's error as the CLI reports it: a bad URL or
// TLS file is a usage error; a plain-text connect that was not refused
// learns when the servers speak TLS; no password shows.
func (d *dial) openErr(err error) error {
	if d.pw.openErr != nil {
		return d.pw.openErr(d, err)
	}
	if errors.Is(err, baton.ErrInvalidOption) {
		return cli.Usagef("%v", d.scrub(err))
	}
	if !errors.Is(err, baton.ErrAuth) {
		err = d.tlsHint(err)
	}
	return d.scrub(err)
}

// tlsHint adds to a plain-text connect's err that a server answers TLS,
// naming the scheme to use; err as it is when none does, or when the
// scheme has no TLS twin.
func (d *dial) tlsHint(err error) error {
	twin := tlsTwin[d.u.Scheme]
	if twin == "" {
		return err
	}
	if tlsErr := plainToTLS(d.ctx, Hosts(d.u), twin); tlsErr != nil {
		return fmt.Errorf("%w (%w)", tlsErr, err)
	}
	return err
}

// complete creates the schema where the engine has one (migrate), then
// runs the engine's opened power on b.
func (d *dial) complete(b *Backend) error {
	if m, ok := baton.As[migrator](b.Client); ok {
		if err := migrate(d, m); err != nil {
			return err
		}
	}
	if d.pw.opened == nil {
		return nil
	}
	return d.pw.opened(d, b)
}

// migrator is an engine with a schema of its own (SQL): it is created
// when a command connects, unless the command only reads.
type migrator interface {
	Migrate(ctx context.Context) error
	SetNoMigrate()
}

// migrate creates m's schema within the connect's --connect-timeout, or
// tells m not to when cfg.ReadOnly: inspect and the exporter run no DDL.
func migrate(d *dial, m migrator) error {
	if d.cfg.ReadOnly {
		m.SetNoMigrate()
		return nil
	}
	if err := m.Migrate(d.connect); err != nil {
		return fmt.Errorf("create the schema on %s: %w", d.u.Redacted, d.scrub(err))
	}
	return nil
}

// scrub removes the URL's password (or else the engine's password
// variable's) from an engine's message: engines are careful, but some
// drivers echo the connection string they failed to parse.
func (d *dial) scrub(err error) error {
	if !d.u.HasUser && d.pw.passwordEnv != "" {
		return scrubErr(d.env.Getenv(d.pw.passwordEnv), err)
	}
	return scrubErr(d.u.Password, err)
}

// scrubErr is err without password, in every form it may be printed in;
// the chain stays, for the exit code.
func scrubErr(password string, err error) error {
	if err == nil || password == "" {
		return err
	}
	r := SecretReplacer(password, func(string) string { return "" })
	if r == nil {
		return err
	}
	if msg := r.Replace(err.Error()); msg != err.Error() {
		return ScrubbedError{Msg: msg, Err: err}
	}
	return err
}
