package backend

import (
	"fmt"
	"net/url"
	"slices"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/cmd/baton/internal/cli"
	"github.com/baton-go/baton/sqllock"
)

// sqlPower: a --ttl of at least minSQLTTL, no clean, a warning before a
// connection off this host that is not verified TLS, the rules of a
// sqlite:// file (sqlite_file.go). The
// schema is created where the engine has one (migrate).
var sqlPower = power{
	checkHold: func(cmd string, cfg *Config, _ Mode) error {
		if cfg.TTL < minSQLTTL {
			return cli.Usagef("%s: --ttl %v: the SQL engine (%s) needs at least %v", cmd, cfg.TTL, sqlEngine(cfg.URL.Scheme), minSQLTTL)
		}
		return nil
	},
	noClean: func(u URL) error {
		return cli.Usagef("clean: not applicable to the SQL engine (%s): it leaves no residue to remove. "+
			"A released row keeps only its token; an expired one is free to the next acquire by the database clock; "+
			"run baton inspect to see the holders, the waiters and their deadlines", sqlEngine(u.Scheme))
	},
	before: sqlBefore,
}

// minSQLTTL is sqllock's smallest TTL: below it the renewal and drift
// margins stop making sense.
const minSQLTTL = 300 * time.Millisecond

// sqlEngine is the BATON_ENGINE of a SQL URL scheme.
func sqlEngine(scheme string) string {
	if scheme == "postgresql" {
		return "postgres"
	}
	return scheme
}

func sqlBefore(d *dial) ([]baton.Option, error) {
	if w := sqlWarning(d.env.Getenv, d.u); w != "" {
		d.env.Note("%s", w)
	}
	if d.u.Scheme == "sqlite" && !d.cfg.Embedded {
		// The embedded default's rules that a shared file does not break.
		// SQLite creates the file but not its directory; a missing one
		// will not appear by retrying until --connect-timeout.
		if err := secureSQLiteFile(localPath(d.u)); err != nil {
			return nil, fmt.Errorf("%w: %s: %w", baton.ErrUnavailable, d.u.Redacted, err)
		}
	}
	return nil, nil
}

// sqlWarning is the one line printed before connecting when the
// connection to a host off this machine is not encrypted or does not
// verify the server: PostgreSQL's sslmode (else PGSSLMODE, else pgx's
// default, prefer) below verify-full, MySQL's tls= other than true. It
// names hosts and settings, never a secret. The hosts are the driver's
// reading of the URL (sqllock.Hosts).
func sqlWarning(getenv func(string) string, u URL) string {
	hosts, err := sqllock.Hosts(u.Orig)
	if err != nil || u.Scheme == "sqlite" {
		return "" // the URL's own error says more, and baton.Open returns it
	}
	var q url.Values
	if pu, err := url.Parse(u.Orig); err == nil {
		q = pu.Query()
	}
	if u.Scheme == "mysql" {
		mode := ""
		if vs := q["tls"]; len(vs) > 0 {
			mode = vs[len(vs)-1] // the driver's reading: the last one
		}
		return mysqlWarning(hosts[0], mode)
	}
	i := slices.IndexFunc(hosts, func(h string) bool { return !isLoopback(h) })
	if i < 0 {
		return ""
	}
	host := hosts[i]
	mode, how := q.Get("sslmode"), "sslmode="
	if mode == "" {
		mode, how = getenv("PGSSLMODE"), "PGSSLMODE="
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

// mysqlWarning is the transport warning of a MySQL host with tls=mode.
func mysqlWarning(host, mode string) string {
	switch {
	case isLoopback(host), mode == "true":
		return ""
	case mode == "skip-verify":
		return fmt.Sprintf("warning: MySQL host %s with tls=skip-verify: the server's certificate is not checked, so a machine "+
			"in the middle can pose as the server and read the credentials; use tls=true", host)
	}
	if mode == "" {
		mode = "false"
	}
	return fmt.Sprintf("warning: MySQL host %s with tls=%s: the credentials and the locks may cross the network unencrypted; "+
		"use tls=true", host, mode)
}
