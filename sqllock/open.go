package sqllock

import (
	"context"
	"crypto/tls"
	"database/sql"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/engine"
	"github.com/baton-go/baton/fence"
	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// init makes baton.Open serve the SQL URLs (see the package doc's Open).
func init() {
	engine.Register(engine.Driver{Open: open, Check: check, Warn: warning}, "postgres", "postgresql", "mysql", "sqlite")
}

// sqliteParams are the connection settings of every SQLite database Open
// opens (see the package doc): writers wait up to 5s for the file's write
// lock instead of failing with SQLITE_BUSY; BEGIN takes the write lock at
// once, so a transaction that read first never fails when it writes; WAL
// lets a reader read while a writer writes.
const sqliteParams = "_pragma=busy_timeout(5000)&_pragma=journal_mode(wal)&_pragma=synchronous(normal)&_txlock=immediate"

// target is a SQL URL parsed and checked: how to open its database.
type target struct {
	dialect fence.Dialect
	connect func() (*sql.DB, error) // a *sql.DB that has not connected yet
}

// check checks cfg's URL offline, as open does before it connects.
func check(cfg engine.Config) error {
	_, err := parse(cfg)
	return err
}

// open connects to cfg's database and returns a client on it.
func open(ctx context.Context, cfg engine.Config) (engine.Conn, error) {
	t, err := parse(cfg)
	if err != nil {
		return nil, err
	}
	db, err := t.connect()
	if err != nil {
		return nil, fmt.Errorf("%w: open %s: %w", baton.ErrUnavailable, cfg.URL.Redacted, scrub(cfg, err))
	}
	if err := ping(ctx, db); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("connect %s: %w", cfg.URL.Redacted, scrub(cfg, err))
	}
	c, err := newClient(db, Options{Dialect: t.dialect, TTL: cfg.TTL, TokenFloor: cfg.TokenFloor, Observer: cfg.Observer, Process: cfg.Process})
	if err != nil {
		_ = db.Close()
		return nil, err
	}
	c.ownDB = true
	return connOf(c), nil
}

// ping pings db until it answers, the database refuses the login, or ctx
// ends (engine.Retry); its error is marked (Classify).
func ping(ctx context.Context, db *sql.DB) error {
	return engine.Retry(ctx, func() error { return Classify(db.PingContext(ctx)) })
}

// parse checks cfg's URL and says how to open its database.
func parse(cfg engine.Config) (*target, error) {
	switch cfg.URL.Scheme {
	case "postgres", "postgresql":
		return parsePostgres(cfg)
	case "mysql":
		return parseMySQL(cfg)
	case "sqlite":
		return parseSQLite(cfg)
	}
	return nil, cfg.URL.Badf("not a SQL URL")
}

// parsePostgres lets pgx parse the URL (multiple hosts, sslmode,
// sslrootcert, target_session_attrs…); TLS follows sslmode.
func parsePostgres(cfg engine.Config) (*target, error) {
	u := cfg.URL
	cc, err := pgConfig(u.Orig)
	if err != nil {
		return nil, u.Badf("%v", scrub(cfg, err))
	}
	if u.TLSName != "" {
		for _, tc := range append([]*tls.Config{cc.TLSConfig}, fallbackTLS(cc)...) {
			if tc != nil && !tc.InsecureSkipVerify {
				tc.ServerName = u.TLSName
			}
		}
	}
	if !u.HasUser {
		if v := cfg.Getenv("BATON_SQL_USER"); v != "" {
			cc.User = v
		}
	}
	if u.Password == "" && !strings.Contains(strings.ToLower(u.Orig), "password=") {
		if v := cfg.Getenv("BATON_SQL_PASSWORD"); v != "" {
			cc.Password = v
		}
	}
	cc.ConnectTimeout = cfg.ConnectTimeout
	if _, ok := cc.RuntimeParams["application_name"]; !ok {
		cc.RuntimeParams["application_name"] = "baton"
	}
	return &target{dialect: fence.Postgres, connect: func() (*sql.DB, error) { return stdlib.OpenDB(*cc), nil }}, nil
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

// pgParsed is the last URL pgConfig parsed, for pgParsedFor: a program's
// CheckURL, Hosts and Open then parse it once (pgx.ParseConfig reads
// ~/.pgpass, the service file and the URL's TLS files each time). The PG*
// variables it reads are part of the key; a file changed in those seconds
// is read again at the next parse after them.
var pgParsed struct {
	sync.Mutex
	key string
	at  time.Time
	cc  *pgx.ConnConfig
}

const pgParsedFor = 10 * time.Second

// pgConfig returns pgx.ParseConfig(orig), a copy the caller may change.
func pgConfig(orig string) (*pgx.ConnConfig, error) {
	key := orig + "\x00" + strings.Join(pgEnv(), "\x00")
	pgParsed.Lock()
	defer pgParsed.Unlock()
	if pgParsed.cc == nil || pgParsed.key != key || time.Since(pgParsed.at) >= pgParsedFor {
		cc, err := pgx.ParseConfig(orig)
		if err != nil {
			return nil, err
		}
		pgParsed.key, pgParsed.at, pgParsed.cc = key, time.Now(), cc
	}
	return pgParsed.cc.Copy(), nil
}

// pgEnv is the process's PG* variables, which pgx.ParseConfig reads.
func pgEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "PG") {
			out = append(out, kv)
		}
	}
	return out
}

// hosts returns the hosts a postgres://, postgresql:// or mysql:// URL
// connects to, in the order they are tried, as its driver reads the URL
// (PostgreSQL: its host list or host= parameter, else PGHOST; a Unix
// socket is its directory), without connecting; a sqlite:// URL has
// none. The transport warning (warning) names the first off this host.
func hosts(rawURL string) ([]string, error) {
	u, err := engine.ParseURL(rawURL)
	if err != nil {
		return nil, err
	}
	switch u.Scheme {
	case "postgres", "postgresql":
		cc, err := pgConfig(u.Orig)
		if err != nil {
			return nil, u.Badf("%v", err)
		}
		hosts := []string{cc.Host}
		for _, f := range cc.Fallbacks {
			if !slices.Contains(hosts, f.Host) {
				hosts = append(hosts, f.Host)
			}
		}
		return hosts, nil
	case "mysql":
		pu, err := url.Parse(u.Orig)
		if err != nil || pu.Hostname() == "" {
			return nil, u.Badf("no host (mysql://user:pass@host:3306/db)")
		}
		return []string{pu.Hostname()}, nil
	case "sqlite":
		return nil, nil
	}
	return nil, u.Badf("not a SQL URL")
}

// parseMySQL turns mysql://user:pass@host:3306/db?tls=… into the driver's
// configuration, credentials from the environment where the URL has none.
func parseMySQL(cfg engine.Config) (*target, error) {
	u := cfg.URL
	pu, err := url.Parse(u.Orig)
	if err != nil {
		return nil, u.Badf("not a URL (mysql://user:pass@host:3306/db?tls=true)")
	}
	if pu.Host == "" || pu.Hostname() == "" {
		return nil, u.Badf("no host (mysql://user:pass@host:3306/db)")
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
		return nil, u.Badf("database %q: want one name after the host", mc.DBName)
	}
	mc.User, mc.Passwd = pu.User.Username(), ""
	if p, ok := pu.User.Password(); ok {
		mc.Passwd = p
	}
	if pu.User == nil || mc.User == "" {
		mc.User = cfg.Getenv("BATON_SQL_USER")
	}
	for _, v := range []string{"BATON_SQL_PASSWORD", "MYSQL_PWD"} {
		if mc.Passwd == "" {
			mc.Passwd = cfg.Getenv(v)
		}
	}
	// The package doc: interpolateParams saves a prepare round trip per
	// statement; DATETIME columns scan as time.Time in UTC.
	mc.InterpolateParams, mc.ParseTime, mc.Loc = true, true, time.UTC
	mc.Timeout = cfg.ConnectTimeout
	if err := mysqlParams(u, pu.Query(), mc); err != nil {
		return nil, err
	}
	if err := mysqlTLSFiles(cfg, mc, pu.Hostname()); err != nil {
		return nil, err
	}
	conn, err := mysql.NewConnector(mc)
	if err != nil {
		return nil, u.Badf("%v", scrub(cfg, err))
	}
	return &target{dialect: fence.MySQL, connect: func() (*sql.DB, error) { return sql.OpenDB(conn), nil }}, nil
}

// mysqlParams applies a MySQL URL's parameters: only tls=, with the
// driver's values true, false, skip-verify or preferred.
func mysqlParams(u engine.URL, q url.Values, mc *mysql.Config) error {
	for k, vs := range q {
		if k != "tls" {
			return u.Badf("parameter %q: only tls= is understood (parseTime and interpolateParams are always on)", k)
		}
		switch v := vs[len(vs)-1]; v {
		case "true", "false", "skip-verify", "preferred":
			mc.TLSConfig = v
		default:
			return u.Badf("tls=%q: want true, false, skip-verify or preferred", v)
		}
	}
	return nil
}

// mysqlTLSFiles gives tls=true a private CA and a client certificate from
// BATON_SQL_CACERT, BATON_SQL_CERT and BATON_SQL_KEY (as the other engines'
// BATON_*_CACERT…): the driver's tls=true knows only the system roots.
// Without those variables (and without a TLS server name) it changes
// nothing.
func mysqlTLSFiles(cfg engine.Config, mc *mysql.Config, host string) error {
	set := false
	for _, v := range []string{"BATON_SQL_CACERT", "BATON_SQL_CERT", "BATON_SQL_KEY"} {
		set = set || cfg.Getenv(v) != ""
	}
	if !set && (cfg.URL.TLSName == "" || mc.TLSConfig != "true") {
		return nil
	}
	if mc.TLSConfig != "true" {
		return cfg.URL.Badf("BATON_SQL_CACERT, BATON_SQL_CERT or BATON_SQL_KEY is set: MySQL URLs need tls=true for them")
	}
	tc, err := cfg.TLSFromEnv("BATON_SQL")
	if err != nil {
		return err
	}
	if tc.ServerName == "" {
		tc.ServerName = host
	}
	mc.TLS = tc
	return nil
}

// parseSQLite takes sqlite:///path/to/locks.db: a file and nothing else.
func parseSQLite(cfg engine.Config) (*target, error) {
	u := cfg.URL
	path, query, _ := strings.Cut(u.Rest(), "?")
	switch {
	case query != "":
		return nil, u.Badf("SQLite URLs take no parameters (baton sets busy_timeout, WAL and immediate transactions)")
	case path == "":
		return nil, u.Badf("no file (sqlite:///path/to/locks.db)")
	case !filepath.IsAbs(path):
		// Relative to whatever directory each process starts in: two
		// processes would lock in two files and never exclude each other.
		return nil, u.Badf("the file must be an absolute path (sqlite:///path/to/locks.db, three slashes)")
	case u.HasUser:
		return nil, u.Badf("SQLite has no users")
	case !slices.Contains(sql.Drivers(), "sqlite"):
		return nil, u.Badf(`no SQLite driver is registered as "sqlite": import _ "github.com/baton-go/baton/sqllock/sqlite"`)
	}
	// A SQLite URI: ?, # and % in the path must be escaped.
	dsn := "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + sqliteParams
	return &target{dialect: fence.SQLite, connect: func() (*sql.DB, error) { return sql.Open("sqlite", dsn) }}, nil
}

// scrub hides the passwords an SQL URL or its environment gave in err's
// text (engine.Scrub).
func scrub(cfg engine.Config, err error) error {
	return engine.Scrub(err, cfg.URL.Password, cfg.Getenv("BATON_SQL_PASSWORD"), cfg.Getenv("MYSQL_PWD"))
}
