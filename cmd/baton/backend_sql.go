package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/sqllock"
	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite" // pure Go: baton stays a static binary
)

// sqliteParams are the connection settings of every SQLite database baton
// opens (sqllock's and fence's package docs): writers wait up to 5s for
// the file's write lock instead of failing with SQLITE_BUSY; BEGIN takes
// the write lock at once, so a transaction that read first never fails
// when it writes; WAL lets inspect read while a run writes.
const sqliteParams = "_pragma=busy_timeout(5000)&_pragma=journal_mode(wal)&_pragma=synchronous(normal)&_txlock=immediate"

func init() {
	register(&engine{
		schemes: []string{"postgres", "postgresql", "mysql", "sqlite"},
		parse: func(u engineURL) error {
			_, err := parseSQL(u, defaultConnectTimeout)
			return err
		},
		open: openSQL,
		checkHold: func(cmd string, u engineURL, cfg *runConfig) error {
			if cfg.ttl < minSQLTTL {
				return usagef("%s: --ttl %v: the SQL engine (%s) needs at least %v", cmd, cfg.ttl, sqlEngine(u.scheme), minSQLTTL)
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

// schemeOf returns the lower-cased scheme of a backend URL ("" if none).
func schemeOf(raw string) string {
	s, _, ok := strings.Cut(raw, "://")
	if !ok {
		return ""
	}
	return strings.ToLower(s)
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

// sqlTarget is a parsed SQL backend URL: what to open, without opening it.
type sqlTarget struct {
	engine string
	// connect returns a *sql.DB that has not connected yet.
	connect func() (*sql.DB, error)
	// file is the SQLite database file.
	file string
	// warning, if set, is the one line openSQL prints before connecting:
	// the connection to a host off this machine is not encrypted or does
	// not verify the server. It names hosts and settings, never a secret.
	warning string
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

// postgresWarning is the transport warning of a PostgreSQL target:
// sslmode below verify-full towards a host off this machine. Absent, it
// is PGSSLMODE, else pgx's default, prefer (TLS if offered, else plain).
func postgresWarning(orig string, cc *pgx.ConnConfig) string {
	hosts := []string{cc.Host}
	for _, f := range cc.Fallbacks {
		hosts = append(hosts, f.Host)
	}
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

// parseSQL checks a postgres://, mysql:// or sqlite:// URL offline and
// returns how to open it. Credentials missing from the URL come from
// BATON_SQL_USER / BATON_SQL_PASSWORD, then the driver's own environment
// (PGUSER, PGPASSWORD, ~/.pgpass for PostgreSQL; MYSQL_PWD for MySQL).
func parseSQL(u engineURL, connectTimeout time.Duration) (sqlTarget, error) {
	switch sqlEngine(u.scheme) {
	case "postgres":
		return parsePostgres(u, connectTimeout)
	case "mysql":
		return parseMySQL(u, connectTimeout)
	case "sqlite":
		return parseSQLite(u)
	}
	return sqlTarget{}, badSQLURL(u, "not a SQL URL")
}

// badSQLURL is the usage error of a SQL URL that does not parse.
func badSQLURL(u engineURL, format string, args ...any) error {
	return usagef("backend %s: "+format, append([]any{u.redacted}, args...)...)
}

// parsePostgres lets pgx parse the URL itself (multiple hosts, sslmode,
// sslrootcert, target_session_attrs…); TLS follows sslmode.
func parsePostgres(u engineURL, connectTimeout time.Duration) (sqlTarget, error) {
	cc, err := pgx.ParseConfig(u.orig)
	if err != nil {
		return sqlTarget{}, badSQLURL(u, "%v", u.scrub(err))
	}
	if u.tlsName != "" {
		for _, tc := range append([]*tls.Config{cc.TLSConfig}, fallbackTLS(cc)...) {
			if tc != nil && !tc.InsecureSkipVerify {
				tc.ServerName = u.tlsName
			}
		}
	}
	if !u.hasUser {
		if v := os.Getenv("BATON_SQL_USER"); v != "" {
			cc.User = v
		}
	}
	if u.password == "" && !strings.Contains(strings.ToLower(u.orig), "password=") {
		if v := os.Getenv("BATON_SQL_PASSWORD"); v != "" {
			cc.Password = v
		}
	}
	cc.ConnectTimeout = connectTimeout
	if _, ok := cc.RuntimeParams["application_name"]; !ok {
		cc.RuntimeParams["application_name"] = "baton"
	}
	return sqlTarget{engine: "postgres", connect: func() (*sql.DB, error) { return stdlib.OpenDB(*cc), nil },
		warning: postgresWarning(u.orig, cc)}, nil
}

// parseMySQL turns mysql://user:pass@host:3306/db?tls=… into the driver's
// configuration, credentials from the environment where the URL has none.
func parseMySQL(u engineURL, connectTimeout time.Duration) (sqlTarget, error) {
	pu, err := url.Parse(u.orig)
	if err != nil {
		return sqlTarget{}, badSQLURL(u, "not a URL (mysql://user:pass@host:3306/db?tls=true)")
	}
	if pu.Host == "" || pu.Hostname() == "" {
		return sqlTarget{}, badSQLURL(u, "no host (mysql://user:pass@host:3306/db)")
	}
	mc := mysql.NewConfig()
	mc.Net = "tcp"
	port := pu.Port()
	if port == "" {
		port = "3306"
	}
	mc.Addr = net.JoinHostPort(pu.Hostname(), port)
	mc.DBName = strings.TrimPrefix(pu.Path, "/")
	if strings.Contains(mc.DBName, "/") {
		return sqlTarget{}, badSQLURL(u, "database %q: want one name after the host", mc.DBName)
	}
	mc.User, mc.Passwd = pu.User.Username(), ""
	if p, ok := pu.User.Password(); ok {
		mc.Passwd = p
	}
	if pu.User == nil || mc.User == "" {
		mc.User = os.Getenv("BATON_SQL_USER")
	}
	if mc.Passwd == "" {
		mc.Passwd = os.Getenv("BATON_SQL_PASSWORD")
	}
	if mc.Passwd == "" {
		mc.Passwd = os.Getenv("MYSQL_PWD")
	}
	// sqllock's doc: interpolateParams saves a prepare round trip per
	// statement; DATETIME columns scan as time.Time in UTC.
	mc.InterpolateParams, mc.ParseTime, mc.Loc = true, true, time.UTC
	mc.Timeout = connectTimeout
	if err := mysqlParams(u, pu.Query(), mc); err != nil {
		return sqlTarget{}, err
	}
	warning := mysqlWarning(pu.Hostname(), mc.TLSConfig) // before the driver normalises it
	if err := mysqlTLSFiles(mc, pu.Hostname(), u.tlsName); err != nil {
		return sqlTarget{}, err
	}
	conn, err := mysql.NewConnector(mc)
	if err != nil {
		return sqlTarget{}, badSQLURL(u, "%v", u.scrub(err))
	}
	return sqlTarget{engine: "mysql", connect: func() (*sql.DB, error) { return sql.OpenDB(conn), nil },
		warning: warning}, nil
}

// mysqlTLSFiles gives tls=true a private CA and a client certificate from
// BATON_SQL_CACERT, BATON_SQL_CERT and BATON_SQL_KEY (as the other engines'
// BATON_*_CACERT…): the driver's tls=true knows only the system roots.
// Without those variables (and without serverName, engineURL.tlsName) it
// changes nothing.
func mysqlTLSFiles(mc *mysql.Config, host, serverName string) error {
	set := false
	for _, v := range []string{"BATON_SQL_CACERT", "BATON_SQL_CERT", "BATON_SQL_KEY"} {
		set = set || os.Getenv(v) != ""
	}
	if !set && (serverName == "" || mc.TLSConfig != "true") {
		return nil
	}
	if mc.TLSConfig != "true" {
		return usagef("BATON_SQL_CACERT, BATON_SQL_CERT or BATON_SQL_KEY is set: MySQL URLs need tls=true for them")
	}
	tc, err := tlsFromEnv("BATON_SQL", serverName)
	if err != nil {
		return err
	}
	if tc.ServerName == "" {
		tc.ServerName = host
	}
	mc.TLS = tc
	return nil
}

// mysqlParams applies a MySQL URL's parameters: only tls=, with the
// driver's values true, false, skip-verify or preferred.
func mysqlParams(u engineURL, q url.Values, mc *mysql.Config) error {
	for k, vs := range q {
		if k != "tls" {
			return badSQLURL(u, "parameter %q: only tls= is understood (parseTime and interpolateParams are always on)", k)
		}
		switch v := vs[len(vs)-1]; v {
		case "true", "false", "skip-verify", "preferred":
			mc.TLSConfig = v
		default:
			return badSQLURL(u, "tls=%q: want true, false, skip-verify or preferred", v)
		}
	}
	return nil
}

// parseSQLite takes sqlite:///path/to/locks.db: a file and nothing else.
func parseSQLite(u engineURL) (sqlTarget, error) {
	path, query, _ := strings.Cut(strings.SplitN(u.orig, "://", 2)[1], "?")
	switch {
	case query != "":
		return sqlTarget{}, badSQLURL(u, "SQLite URLs take no parameters (baton sets busy_timeout, WAL and immediate transactions)")
	case path == "":
		return sqlTarget{}, badSQLURL(u, "no file (sqlite:///path/to/locks.db)")
	case !filepath.IsAbs(path):
		// Relative to whatever directory each job starts in: two jobs
		// would lock in two files and never exclude each other.
		return sqlTarget{}, badSQLURL(u, "the file must be an absolute path (sqlite:///path/to/locks.db, three slashes)")
	case u.hasUser:
		return sqlTarget{}, badSQLURL(u, "SQLite has no users")
	}
	// A SQLite URI: ?, # and % in the path must be escaped.
	dsn := "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + sqliteParams
	return sqlTarget{engine: "sqlite", file: path, connect: func() (*sql.DB, error) { return sql.Open("sqlite", dsn) }}, nil
}

// openSQL connects to a SQL backend: the connection is proved by a ping,
// retried until --connect-timeout (a database that is restarting is not
// down yet); then the schema is created unless cfg.readOnly.
func openSQL(ctx context.Context, cfg *runConfig, u engineURL, _ string) (*backend, error) {
	t, err := parseSQL(u, cfg.connectTimeout)
	if err != nil {
		return nil, err
	}
	if t.warning != "" {
		note("%s", t.warning)
	}
	switch {
	case cfg.embedded:
		// Private: lock names tell what the user runs, and whoever can
		// write the file can take or release any of the locks.
		if err := secureEmbedded(t.file); err != nil {
			return nil, fmt.Errorf("%w: embedded backend: %w", baton.ErrUnavailable, err)
		}
	case t.engine == "sqlite":
		// The embedded default's rules that a shared file does not break
		// (sqlite_file.go). SQLite creates the file but not its
		// directory; a missing one will not appear by retrying until
		// --connect-timeout.
		if err := secureSQLiteFile(t.file); err != nil {
			return nil, fmt.Errorf("%w: %s: %w", baton.ErrUnavailable, u.redacted, err)
		}
	}
	db, err := t.connect()
	if err != nil {
		return nil, fmt.Errorf("%w: open %s: %w", baton.ErrUnavailable, u.redacted, u.scrub(err))
	}
	cctx, cancel := context.WithTimeout(ctx, cfg.connectTimeout)
	defer cancel()
	if err := pingSQL(cctx, db); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("connect %s: %w", u.redacted, u.scrub(err))
	}
	// The schema is created below (not by a read-only command): the
	// client itself only checks it, at its first use.
	c, err := sqllock.New(db, sqllock.Options{TTL: cfg.ttl, NoMigrate: true, Observer: cfg.observer})
	if err != nil {
		_ = db.Close()
		return nil, err
	}
	closeAll := func() { _ = c.Close(); _ = db.Close() }
	if !cfg.readOnly {
		if err := c.Migrate(cctx); err != nil {
			closeAll()
			return nil, fmt.Errorf("create the schema on %s: %w", u.redacted, sqlErr(u.scrub(err)))
		}
	}
	return &backend{
		engine: t.engine,
		locker: func(name string, mode lockMode, permits int) (baton.Locker, error) {
			return pickLocker(name, mode, permits, c.Mutex, c.RWMutex, c.Semaphore)
		},
		election: func(name string) (baton.Elector, error) { return c.Election(name) },
		inspect:  func(a *adminSession, w io.Writer) int { return inspectSQL(a, w, c) },
		view:     sqlView(c),
		close:    closeAll,
	}, nil
}

// sqlUnsupported is the usage error for a command that does not apply to
// the SQL engine (clean).
func sqlUnsupported(cmd string, engine string) error {
	return usagef("%s: not applicable to the SQL engine (%s): it leaves no residue to remove. "+
		"A released row keeps only its token; an expired one is free to the next acquire by the database clock; "+
		"run baton inspect to see the holders, the waiters and their deadlines", cmd, engine)
}

// pingSQL pings until it works, the database refuses the credentials, or
// ctx ends.
func pingSQL(ctx context.Context, db *sql.DB) error {
	delay := 50 * time.Millisecond
	for {
		err := db.PingContext(ctx)
		if err == nil {
			return nil
		}
		err = sqlErr(err)
		if errors.Is(err, baton.ErrAuth) || ctx.Err() != nil {
			return err
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		delay = min(2*delay, time.Second)
	}
}

// sqlErr marks authentication, authorization and TLS failures with
// baton.ErrAuth (exit 77) and everything else with baton.ErrUnavailable
// (exit 69).
func sqlErr(err error) error {
	if errors.Is(err, baton.ErrAuth) || errors.Is(err, baton.ErrUnavailable) {
		return err
	}
	var (
		pe  *pgconn.PgError
		me  *mysql.MySQLError
		ua  x509.UnknownAuthorityError
		he  x509.HostnameError
		ce  x509.CertificateInvalidError
		rhe tls.RecordHeaderError
	)
	auth := false
	switch {
	case errors.As(err, &pe):
		// 28000 invalid_authorization_specification (pg_hba.conf, no
		// SSL), 28P01 invalid_password, 42501 insufficient_privilege.
		auth = pe.Code == "28000" || pe.Code == "28P01" || pe.Code == "42501"
	case errors.As(err, &me):
		// 1044 no access to the database, 1045 access denied (user or
		// password), 1142 command denied (no CREATE), 1698 access denied
		// (socket/plugin auth), 3159 secure transport required.
		switch me.Number {
		case 1044, 1045, 1142, 1698, 3159:
			auth = true
		}
	case errors.Is(err, mysql.ErrNoTLS), errors.As(err, &ua), errors.As(err, &he), errors.As(err, &ce), errors.As(err, &rhe):
		auth = true
	default:
		msg := err.Error()
		auth = strings.Contains(msg, "server refused TLS connection") || strings.Contains(msg, "x509:") ||
			strings.Contains(msg, "tls: ")
	}
	if auth {
		return fmt.Errorf("%w: %w", baton.ErrAuth, err)
	}
	return fmt.Errorf("%w: %w", baton.ErrUnavailable, err)
}

// inspectSQL is inspect on the SQL engine. A SQL lock is a row per
// holder: its owner (the grant's random identity), token and deadline on
// the database clock. Waiters keep an intent row that their retries
// refresh (RW locks, semaphores, elections on every engine; mutexes on
// PostgreSQL and MySQL): they are listed after the holders, in the order
// they are served (their ticket, shown as the token), as "waiting".
func inspectSQL(a *adminSession, w io.Writer, c *sqllock.Client) int {
	ctx, cancel := context.WithTimeout(a.ctx, a.cfg.connectTimeout)
	defer cancel()
	rows, err := c.Inspect(ctx, a.name)
	if err != nil {
		return failAdmin(a.ctx, sqlErr(err))
	}
	out := make([]entryJSON, 0, len(rows))
	for i, r := range rows {
		e := entryJSON{
			Position: i, Entry: fmt.Sprintf("%d/%s/%s", r.Slot, r.Kind, r.Owner), Kind: r.Recipe(), Marker: r.Kind,
			Session: r.Owner, State: "holder", Holder: true,
		}
		if r.Token != 0 {
			t := r.Token
			e.Token = &t
		}
		exp, left := r.ExpiresAt, r.Left.Milliseconds()
		e.ExpiresAt, e.LeaseLeftMS = &exp, &left
		switch {
		case r.Waiting() && r.Left <= 0:
			e.State, e.Holder = "expired", false
			e.Note = "waiter gone: its intent row was not refreshed"
		case r.Waiting():
			e.State, e.Holder = "waiting", false
		case r.Left <= 0:
			e.State, e.Holder = "expired", false
			e.Note = "lease expired on the database clock: free to the next acquire"
		}
		out = append(out, e)
	}
	if a.cfg.json {
		err = writeJSON(w, out)
	} else {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "POS\tSLOT\tKIND\tOWNER\tTOKEN\tEXPIRES (DB CLOCK, UTC)\tLEFT\tSTATE")
		for i, e := range out {
			fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", e.Position, rows[i].Slot, termSafe(e.Kind), termSafe(e.Session),
				tokenText(rows[i].Token), rows[i].ExpiresAt.Format("2006-01-02 15:04:05.000"),
				rows[i].Left.Round(time.Millisecond), e.State)
		}
		err = tw.Flush()
	}
	if err != nil {
		note("write: %v", err)
		return exitSoftware
	}
	if len(out) == 0 {
		note("%q has no holder on %s", a.name, a.b.engine)
	}
	if a.b.engine == "sqlite" {
		note("mutex waiters keep no row on SQLite (every write waits for the file lock), so they are not listed")
	}
	return exitOK
}

// fallbackTLS is the TLS configs of cc's fallbacks (sslmode=prefer tries
// TLS, then plain text).
func fallbackTLS(cc *pgx.ConnConfig) []*tls.Config {
	var out []*tls.Config
	for _, f := range cc.Fallbacks {
		out = append(out, f.TLSConfig)
	}
	return out
}
