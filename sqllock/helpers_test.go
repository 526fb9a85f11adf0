package sqllock_test

import (
	"context"
	"database/sql"
	"net"
	"net/url"
	"path/filepath"
	"testing"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/batontest"
	"github.com/baton-go/baton/batontest/testenv"
	"github.com/baton-go/baton/faultproxy"
	"github.com/baton-go/baton/sqllock"
	"github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite"
)

// testTTL is the row lease time of the tests: short, so losses and
// expiries happen within a couple of seconds.
const testTTL = 1500 * time.Millisecond

// sqliteConformanceTTL is the row lease time of SQLite's conformance run.
// All the suite's clients (up to 50 at once) share one file and one write
// lock: under load a release or a renewal can queue behind the others'
// attempts for over a second, and at testTTL a holder then loses its
// lease by deadline in the middle of a mutual-exclusion check. 4s leaves
// room for that queue; the network servers keep testTTL.
const sqliteConformanceTTL = 4 * time.Second

// sqliteDSN is the DSN the package doc recommends.
const sqliteDSN = "?_pragma=busy_timeout(5000)&_pragma=journal_mode(wal)&_pragma=synchronous(normal)&_txlock=immediate"

// backend is one real database the tests run against.
type backend struct {
	name string
	ttl  time.Duration // the conformance run's TTL
	// open opens a new *sql.DB on the database; with proxied set, through
	// a fault proxy of its own, returned so the test can cut it (nil for
	// SQLite, which has no network).
	open func(t testing.TB, proxied bool) (*sql.DB, *faultproxy.Proxy)
}

// backends returns the three databases, skipping (by hand) those not
// configured.
func backends(t *testing.T) []backend {
	t.Helper()
	file := filepath.Join(t.TempDir(), "locks.db")
	return []backend{
		{name: "postgres", ttl: testTTL, open: func(t testing.TB, proxied bool) (*sql.DB, *faultproxy.Proxy) {
			u, err := url.Parse(testenv.Postgres(t))
			if err != nil {
				t.Fatalf("url.Parse(BATON_TEST_POSTGRES) = %v", err)
			}
			var p *faultproxy.Proxy
			if proxied {
				p = startProxy(t, u.Host)
				u.Host = p.Addr
			}
			return openDB(t, "pgx", u.String()), p
		}},
		{name: "mysql", ttl: testTTL, open: func(t testing.TB, proxied bool) (*sql.DB, *faultproxy.Proxy) {
			return openMySQL(t, proxied, nil)
		}},
		{name: "sqlite", ttl: sqliteConformanceTTL, open: func(t testing.TB, _ bool) (*sql.DB, *faultproxy.Proxy) {
			return openDB(t, "sqlite", "file:"+file+sqliteDSN), nil
		}},
	}
}

// openMySQL opens a *sql.DB on BATON_TEST_MYSQL, through a fault proxy of
// its own when proxied, setting the session variables vars on every
// connection.
func openMySQL(t testing.TB, proxied bool, vars map[string]string) (*sql.DB, *faultproxy.Proxy) {
	cfg, err := mysql.ParseDSN(testenv.MySQL(t))
	if err != nil {
		t.Fatalf("mysql.ParseDSN(BATON_TEST_MYSQL) = %v", err)
	}
	cfg.InterpolateParams = true
	for k, v := range vars {
		if cfg.Params == nil {
			cfg.Params = make(map[string]string)
		}
		cfg.Params[k] = v
	}
	var p *faultproxy.Proxy
	if proxied {
		p = startProxy(t, cfg.Addr)
		cfg.Addr = p.Addr
	}
	return openDB(t, "mysql", cfg.FormatDSN()), p
}

func startProxy(t testing.TB, upstream string) *faultproxy.Proxy {
	t.Helper()
	if _, _, err := net.SplitHostPort(upstream); err != nil {
		upstream = net.JoinHostPort(upstream, "5432")
	}
	p, err := faultproxy.Start(upstream)
	if err != nil {
		t.Fatalf("faultproxy.Start(%q) = %v", upstream, err)
	}
	t.Cleanup(p.Close)
	return p
}

func openDB(t testing.TB, driver, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatalf("sql.Open(%q) = %v", driver, err)
	}
	t.Cleanup(func() { _ = db.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := db.PingContext(ctx); err != nil {
		t.Fatalf("Ping(%s) = %v", driver, err)
	}
	return db
}

// newClient returns a client on db closed at the end of the test.
func newClient(t testing.TB, db *sql.DB, o sqllock.Options) *baton.Client {
	t.Helper()
	if o.TTL == 0 {
		o.TTL = testTTL
	}
	c, err := sqllock.New(db, o)
	if err != nil {
		t.Fatalf("sqllock.New() = %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// opCtx bounds one blocking call of a test.
func opCtx(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}

// lock acquires name on c or stops the test.
func lock(t testing.TB, c *baton.Client, name string) *baton.Lease {
	t.Helper()
	m, err := c.Mutex(name)
	if err != nil {
		t.Fatalf("Mutex(%q) = %v", name, err)
	}
	l, err := m.Lock(opCtx(t, 10*time.Second))
	if err != nil {
		t.Fatalf("Lock(%q) = %v, want a lease", name, err)
	}
	return l
}

// engineOn describes backend b to the conformance suite, with every
// client on the tables of prefix ("": the default), and on MySQL's token
// counter even on MariaDB if counter is set (see sqllock.CounterOnly).
func engineOn(t *testing.T, b backend, prefix string, counter bool) batontest.Engine {
	adminDB, _ := b.open(t, false)
	admin := newClient(t, adminDB, sqllock.Options{TablePrefix: prefix})
	if counter {
		sqllock.CounterOnly(sqllock.Of(admin))
	}
	return batontest.Engine{
		Name: "sql/" + b.name,
		NewClient: func(t testing.TB) batontest.Client {
			db, p := b.open(t, true)
			c, err := sqllock.New(db, sqllock.Options{TTL: b.ttl, TablePrefix: prefix})
			if err != nil {
				t.Fatalf("sqllock.New() = %v", err)
			}
			if counter {
				sqllock.CounterOnly(sqllock.Of(c))
			}
			warm(t, c)
			return batontest.FromClient(c, func(t testing.TB) { cutOff(t, db, p) })
		},
		Entries: func(t testing.TB, name string) []string {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			es, err := sqllock.Of(admin).Entries(ctx, name)
			if err != nil {
				t.Fatalf("Entries(%q) = %v", name, err)
			}
			return es
		},
		// A row expires TTL after its last renewal executed; waiters poll
		// at least every TTL/4.
		SessionTTL: b.ttl + 100*time.Millisecond,
	}
}

// warm takes and frees a lock of its own on c, so that c's connections
// (the keeper's two and one for attempts) are open before the suite
// starts its clock: a dozen clients connecting at once through their
// proxies took longer than a 1.5 s TTL's attempt timeout on a loaded
// 2-core host, which tests how fast PostgreSQL forks backends rather
// than the recipes.
func warm(t testing.TB, c *baton.Client) {
	t.Helper()
	if err := lock(t, c, uniqueName("warm")).Release(opCtx(t, 10*time.Second)); err != nil {
		t.Fatalf("warm-up Release = %v", err)
	}
}

// cutOff cuts a client off the database without telling it: the fault
// proxy blackholes its connections (PostgreSQL, MySQL), or its *sql.DB is
// closed under it (SQLite, which has no network), so every renewal fails
// and the row expires by the database clock.
func cutOff(t testing.TB, db *sql.DB, p *faultproxy.Proxy) {
	if p != nil {
		if err := p.Blackhole(""); err != nil {
			t.Fatalf("Blackhole() = %v", err)
		}
		return
	}
	_ = db.Close()
}
