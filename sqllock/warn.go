package sqllock

import (
	"fmt"
	"net/url"
	"slices"

	"github.com/baton-go/baton/engine"
)

// warning is the engine's transport warning (engine.Driver.Warn): the
// one line a program shows before connecting to a host off this machine
// whose connection is not encrypted or does not verify the server:
// PostgreSQL's sslmode (else PGSSLMODE, else pgx's default, prefer)
// below verify-full, MySQL's tls= other than true. It names hosts and
// settings, never a secret. The hosts are the driver's reading of the
// URL (hosts).
func warning(cfg engine.Config) string {
	u := cfg.URL
	hs, err := hosts(u.Orig)
	if err != nil || u.Scheme == "sqlite" {
		return "" // the URL's own error says more, and Open returns it
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
		return mysqlWarning(hs[0], mode)
	}
	i := slices.IndexFunc(hs, func(h string) bool { return !engine.Loopback(h) })
	if i < 0 {
		return ""
	}
	host := hs[i]
	mode, how := q.Get("sslmode"), "sslmode="
	if mode == "" {
		mode, how = cfg.Getenv("PGSSLMODE"), "PGSSLMODE="
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
	case engine.Loopback(host), mode == "true":
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
