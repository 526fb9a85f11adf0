package main

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/cmd/baton/internal/cli"
	"github.com/baton-go/baton/sqllock"
	_ "modernc.org/sqlite" // pure Go: baton stays a static binary; sqllock opens sqlite:// with it
)

func init() {
	register(&backendType{
		schemes: []string{"postgres", "postgresql", "mysql", "sqlite"},
		// sqllock parses and checks the URL, credentials and TLS files
		// (baton.CheckURL, then baton.Open); a PostgreSQL URL is parsed
		// once for the check, the warning and the connect.
		parse: func(u engineURL) error { return baton.CheckURL(u.orig, baton.WithTLSServerName(u.tlsName)) },
		open:  openSQL,
		checkHold: func(cmd string, u engineURL, cfg *runConfig) error {
			if cfg.ttl < minSQLTTL {
				return cli.Usagef("%s: --ttl %v: the SQL engine (%s) needs at least %v", cmd, cfg.ttl, sqlEngine(u.scheme), minSQLTTL)
			}
			return nil
		},
		noClean: func(u engineURL) error { return sqlUnsupported("clean", sqlEngine(u.scheme)) },
	})
}

// sqlEngine returns the BATON_ENGINE of a SQL URL scheme, "" for others.
func sqlEngine(scheme string) string {
	switch scheme {
	case "postgres", "postgresql":
		return "postgres"
	case "mysql":
		return "mysql"
	case "sqlite":
		return "sqlite"
	}
	return ""
}

// stateDir is the user's state directory for baton: $XDG_STATE_HOME/baton
// (only when absolute, as the XDG spec says), else ~/.local/state/baton.
// It holds the embedded default backend and clean's evidence.
func stateDir() (string, error) {
	if d := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "baton"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("no XDG_STATE_HOME and no home directory: %w", err)
	}
	return filepath.Join(home, ".local", "state", "baton"), nil
}

// embeddedBackend is the backend used without --backend and
// $BATON_BACKEND: a SQLite file in the user's state directory, so that
// shells and cron jobs of one host exclude each other with zero setup.
func embeddedBackend() (string, error) {
	dir, err := stateDir()
	if err != nil {
		return "", err
	}
	return "sqlite://" + filepath.Join(dir, "locks.db"), nil
}

// isLoopback reports whether host is this machine: a loopback name or
// address, or a Unix socket directory (PostgreSQL's host=/path). Names are
// not resolved: the check is made offline, before connecting.
func isLoopback(host string) bool {
	if strings.HasPrefix(host, "/") || strings.EqualFold(host, "localhost") ||
		strings.HasSuffix(strings.ToLower(host), ".localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// remoteHost returns the first of hosts that is not loopback, else "".
func remoteHost(hosts ...string) string {
	for _, h := range hosts {
		if !isLoopback(h) {
			return h
		}
	}
	return ""
}

// sqlWarning is the one line openSQL prints before connecting when the
// connection to a host off this machine is not encrypted or does not
// verify the server. It names hosts and settings, never a secret. The
// hosts are the driver's reading of the URL (sqllock.Hosts).
func sqlWarning(u engineURL) string {
	hosts, err := sqllock.Hosts(u.orig)
	if err != nil {
		return "" // the URL's own error says more, and baton.Open returns it
	}
	switch sqlEngine(u.scheme) {
	case "postgres":
		return postgresWarning(u.orig, hosts)
	case "mysql":
		mode := ""
		if pu, err := url.Parse(u.orig); err == nil {
			if vs := pu.Query()["tls"]; len(vs) > 0 {
				mode = vs[len(vs)-1] // the driver's reading: the last one
			}
		}
		return mysqlWarning(hosts[0], mode)
	}
	return ""
}

// postgresWarning is the transport warning of a PostgreSQL target:
// sslmode below verify-full towards a host off this machine. Absent, it
// is PGSSLMODE, else pgx's default, prefer (TLS if offered, else plain).
func postgresWarning(orig string, hosts []string) string {
	host := remoteHost(hosts...)
	if host == "" {
		return ""
	}
	mode, how := "", "sslmode="
	if pu, err := url.Parse(orig); err == nil {
		mode = pu.Query().Get("sslmode")
	}
	if mode == "" {
		mode, how = os.Getenv("PGSSLMODE"), "PGSSLMODE="
	}
	if mode == "" {
		mode, how = "prefer", "no sslmode, so "
	}
	switch mode {
	case "verify-full":
		return ""
	case "require", "verify-ca":
		return fmt.Sprintf("warning: PostgreSQL host %s with %s%s: TLS without checking the server's name, so a machine in the middle "+
			"can pose as the server and read the credentials; use sslmode=verify-full", host, how, mode)
	}
	return fmt.Sprintf("warning: PostgreSQL host %s with %s%s: the credentials and the locks may cross the network unencrypted "+
		"and the server is not verified; use sslmode=verify-full", host, how, mode)
}

// mysqlWarning is the transport warning of a MySQL target: no tls=true
// towards a host off this machine.
func mysqlWarning(host, tlsMode string) string {
	if isLoopback(host) {
		return ""
	}
	switch tlsMode {
	case "true":
		return ""
	case "skip-verify":
		return fmt.Sprintf("warning: MySQL host %s with tls=skip-verify: the server's certificate is not checked, so a machine "+
			"in the middle can pose as the server and read the credentials; use tls=true", host)
	}
	if tlsMode == "" {
		tlsMode = "false"
	}
	return fmt.Sprintf("warning: MySQL host %s with tls=%s: the credentials and the locks may cross the network unencrypted; "+
		"use tls=true", host, tlsMode)
}

// scrub removes the URL's password from a driver's message: drivers are
// careful, but some echo the connection string they failed to parse.
func (u engineURL) scrub(err error) error {
	if err == nil || u.password == "" {
		return err
	}
	r := secretReplacer(u.password, func(string) string { return "" })
	if r == nil {
		return err
	}
	msg := r.Replace(err.Error())
	if msg == err.Error() {
		return err
	}
	return scrubbedError{msg: msg, err: err} // keeps the chain: sqlErr classifies it
}

// sqliteFile is the file of a sqlite:// URL (baton.CheckURL checked it).
func sqliteFile(u engineURL) string {
	path, _, _ := strings.Cut(strings.SplitN(u.orig, "://", 2)[1], "?")
	return path
}

// openSQL connects to a SQL backend through sqllock (baton.Open: the
// connection is proved by a ping, retried until --connect-timeout, a
// database that is restarting not being down yet); then the schema is
// created, unless cfg.readOnly: inspect and the exporter run no DDL.
func openSQL(ctx context.Context, cfg *runConfig, u engineURL, _ string, opts []baton.Option) (*backend, error) {
	if w := sqlWarning(u); w != "" {
		note("%s", w)
	}
	switch {
	case cfg.embedded:
		// Private: lock names tell what the user runs, and whoever can
		// write the file can take or release any of the locks.
		if err := secureEmbedded(sqliteFile(u)); err != nil {
			return nil, fmt.Errorf("%w: embedded backend: %w", baton.ErrUnavailable, err)
		}
	case sqlEngine(u.scheme) == "sqlite":
		// The embedded default's rules that a shared file does not break
		// (sqlite_file.go). SQLite creates the file but not its
		// directory; a missing one will not appear by retrying until
		// --connect-timeout.
		if err := secureSQLiteFile(sqliteFile(u)); err != nil {
			return nil, fmt.Errorf("%w: %s: %w", baton.ErrUnavailable, u.redacted, err)
		}
	}
	// One --connect-timeout for the connect and the schema.
	cctx, cancel := context.WithTimeout(ctx, cfg.connectTimeout)
	defer cancel()
	bc, c, err := dialSQL(cctx, u, opts)
	if err != nil {
		return nil, err
	}
	if cfg.readOnly {
		c.SetNoMigrate()
	} else if err := c.Migrate(cctx); err != nil {
		_ = bc.Close()
		return nil, fmt.Errorf("create the schema on %s: %w", u.redacted, u.scrub(err))
	}
	return &backend{
		engine: bc.Engine(),
		client: bc,
		locker: func(name string, mode lockMode, permits int) (baton.Locker, error) {
			return pickLocker(name, mode, permits, c.Mutex, c.RWMutex, c.Semaphore)
		},
		election: func(name string) (baton.Elector, error) { return c.Election(name) },
	}, nil
}

// dialSQL opens u with baton.Open and returns the client with its
// sqllock.Client.
func dialSQL(ctx context.Context, u engineURL, opts []baton.Option) (*baton.Client, *sqllock.Client, error) {
	bc, err := baton.Open(ctx, u.orig, opts...)
	if err != nil {
		return nil, nil, u.scrub(err)
	}
	c, ok := baton.As[*sqllock.Client](bc)
	if !ok {
		_ = bc.Close()
		return nil, nil, fmt.Errorf("%s: the %s engine gave no *sqllock.Client", u.redacted, bc.Engine())
	}
	return bc, c, nil
}

// sqlDB opens the database of a SQL URL for a statement of the CLI's own
// (drill's cleanup), with the engine's name ("postgres", "mysql",
// "sqlite"); done releases it.
func sqlDB(ctx context.Context, connectTimeout time.Duration, u engineURL) (db *sql.DB, eng string, done func(), err error) {
	cctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	bc, c, err := dialSQL(cctx, u, openOptions(&runConfig{connectTimeout: connectTimeout}, u))
	if err != nil {
		return nil, "", nil, err
	}
	return c.DB(), bc.Engine(), func() { _ = bc.Close() }, nil
}

// sqlUnsupported is the usage error for a command that does not apply to
// the SQL engine (clean).
func sqlUnsupported(cmd string, engine string) error {
	return cli.Usagef("%s: not applicable to the SQL engine (%s): it leaves no residue to remove. "+
		"A released row keeps only its token; an expired one is free to the next acquire by the database clock; "+
		"run baton inspect to see the holders, the waiters and their deadlines", cmd, engine)
}

// sqlErr marks authentication, authorization and TLS failures with
// baton.ErrAuth (exit 77) and everything else with baton.ErrUnavailable
// (exit 69), as sqllock marks its own errors.
func sqlErr(err error) error { return sqllock.Classify(err) }
