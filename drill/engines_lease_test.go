package drill_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" driver

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/batontest/testenv"
	batonengine "github.com/baton-go/baton/engine"
	"github.com/baton-go/baton/faultproxy"
	"github.com/baton-go/baton/sqllock"
)

// The lease engines: engines whose waiters hold nothing on the server and
// retry (with backoff, and a wake-up on releases they hear of), while the
// holder's lease is a row or key kept alive by package keeper. Adding one
// is one more constructor in leaseEngines.

// The MySQL driver logs every connection a drill cuts; the drills judge
// the errors Lock returns instead.
func init() { _ = mysql.SetLogger(log.New(io.Discard, "", 0)) }

// sqlTTL is the row lease time of the SQL drills, as etcd's.
const sqlTTL = 2 * time.Second

// waiterSettle is how long a lease engine's waiters, once started, get to
// make their first attempts before a drill injects its fault: nothing on
// the server shows that they wait.
const waiterSettle = 300 * time.Millisecond

// leaseEngine is a named constructor of a lease engine.
type leaseEngine struct {
	name string
	new  func(t *testing.T) *engine
	// embedded: the engine runs in the test process (SQLite), so there is
	// no transport to fault (see forEachNetworkEngine).
	embedded bool
}

// leaseEngines lists the lease engines the drills run.
func leaseEngines() []leaseEngine {
	return append(sqlEngines(), redisEngines()...)
}

// forEachLeaseEngine runs f as a subtest per lease engine.
func forEachLeaseEngine(t *testing.T, f func(t *testing.T, e *engine)) {
	runLeaseEngines(t, nil, f)
}

// forEachSQLEngine runs f as a subtest per SQL lease engine (PostgreSQL,
// MariaDB, SQLite): the rows that need a table beside the lock.
func forEachSQLEngine(t *testing.T, f func(t *testing.T, e *engine)) {
	runLeaseEngines(t, isSQL, f)
}

// isSQL reports whether le is one of sqlEngines.
func isSQL(le leaseEngine) bool {
	return slices.ContainsFunc(sqlEngines(), func(s leaseEngine) bool { return s.name == le.name })
}

// runLeaseEngines runs f as a subtest per lease engine that keep keeps
// (every one when keep is nil): a row that does not apply to an engine
// gives it no subtest rather than one that skips.
func runLeaseEngines(t *testing.T, keep func(leaseEngine) bool, f func(t *testing.T, e *engine)) {
	for _, le := range leaseEngines() {
		if keep != nil && !keep(le) {
			continue
		}
		t.Run(le.name, func(t *testing.T) { f(t, le.new(t)) })
	}
}

// dialLeaseChild is dialChild for the lease engines.
func dialLeaseChild(ctx context.Context, engine, endpoint string) (*lockClient, error) {
	switch engine {
	case "postgres", "mysql", "sqlite":
		driver, dsn := sqlDriverDSN(engine, endpoint)
		db, err := sql.Open(driver, dsn)
		if err != nil {
			return nil, err
		}
		c, err := sqllock.New(db, sqllock.Options{TTL: sqlTTL})
		if err != nil {
			db.Close()
			return nil, err
		}
		if err := sqlWarm(ctx, c); err != nil {
			c.Close()
			db.Close()
			return nil, err
		}
		return &lockClient{lease: true, mutex: sqlMutex(c), entries: sqlEntries(c),
			close: func() error { err := c.Close(); db.Close(); return err }}, nil
	case "redis", "redlock":
		return dialRedisChild(ctx, engine, endpoint)
	}
	return nil, fmt.Errorf("unknown engine %q", engine)
}

// sqlTarget is the database of a SQL engine.
type sqlTarget struct {
	driver string  // "pgx", "mysql", "sqlite"
	dsn    string  // for a direct connection (SQLite: the file's DSN)
	admin  *sql.DB // a healthy connection pool of the drill's own
}

// sqlDriverDSN returns the driver and DSN a SQL engine's endpoint opens
// with: a PostgreSQL URL, a go-sql-driver DSN, a SQLite file.
func sqlDriverDSN(engine, endpoint string) (driver, dsn string) {
	switch engine {
	case "postgres":
		return "pgx", endpoint
	case "mysql":
		return "mysql", endpoint
	}
	return "sqlite", "file:" + endpoint + sqliteLockDSN
}

// sqliteLockDSN is what package sqllock's doc recommends for SQLite.
const sqliteLockDSN = "?_pragma=busy_timeout(5000)&_pragma=journal_mode(wal)&_pragma=synchronous(normal)&_txlock=immediate"

// sqlEngines are PostgreSQL and MariaDB, reached through fault proxies,
// and SQLite, embedded (transport rows skip it).
func sqlEngines() []leaseEngine {
	return []leaseEngine{
		{"postgres", func(t *testing.T) *engine {
			u, err := url.Parse(testenv.Postgres(t))
			if err != nil {
				t.Fatalf("url.Parse(BATON_TEST_POSTGRES) = %v", err)
			}
			return sqlEngine(t, "postgres", u.String(), true)
		}, false},
		{"mysql", func(t *testing.T) *engine {
			cfg, err := mysql.ParseDSN(testenv.MySQL(t))
			if err != nil {
				t.Fatalf("mysql.ParseDSN(BATON_TEST_MYSQL) = %v", err)
			}
			cfg.InterpolateParams = true
			return sqlEngine(t, "mysql", cfg.FormatDSN(), true)
		}, false},
		{"sqlite", func(t *testing.T) *engine {
			return sqlEngine(t, "sqlite", filepath.Join(t.TempDir(), "locks.db"), false)
		}, true},
	}
}

// withServer returns endpoint (a PostgreSQL URL or MySQL DSN) pointing at
// addr instead of its server, and with application name app (PostgreSQL).
func withServer(engine, endpoint, addr, app string) (string, error) {
	switch engine {
	case "postgres":
		u, err := url.Parse(endpoint)
		if err != nil {
			return "", err
		}
		if addr != "" {
			u.Host = addr
		}
		if app != "" {
			q := u.Query()
			q.Set("application_name", app)
			u.RawQuery = q.Encode()
		}
		return u.String(), nil
	case "mysql":
		cfg, err := mysql.ParseDSN(endpoint)
		if err != nil {
			return "", err
		}
		if addr != "" {
			cfg.Addr = addr
		}
		if app != "" {
			// MySQL has no application name outside performance_schema:
			// the client connects as a user of its own (mysqlAppUser).
			cfg.User, cfg.Passwd = app, ""
		}
		return cfg.FormatDSN(), nil
	}
	return endpoint, nil
}

// serverAddr is the host:port of a PostgreSQL URL or MySQL DSN.
func serverAddr(engine, endpoint string) string {
	if engine == "postgres" {
		u, _ := url.Parse(endpoint)
		if u.Port() == "" {
			return net.JoinHostPort(u.Hostname(), "5432")
		}
		return u.Host
	}
	cfg, _ := mysql.ParseDSN(endpoint)
	return cfg.Addr
}

func sqlMutex(c *baton.Client) func(string) (baton.Locker, error) {
	return func(name string) (baton.Locker, error) {
		m, err := c.Mutex(name)
		if err != nil {
			return nil, err // not a typed nil inside the interface
		}
		return m, nil
	}
}

func sqlEngine(t *testing.T, kind, endpoint string, network bool) *engine {
	driver, dsn := sqlDriverDSN(kind, endpoint)
	admin, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatalf("sql.Open(%s) = %v", driver, err)
	}
	t.Cleanup(func() { admin.Close() })
	e := &engine{
		name: kind, family: leaseFamily, ttl: sqlTTL, endpoint: endpoint, network: network,
		recipes: []recipe{mutexRecipe},
		sql:     &sqlTarget{driver: driver, dsn: dsn, admin: admin},
		// sqlEntries lists "mode/owner".
		owns: func(entry, owner string) bool { return strings.HasSuffix(entry, "/"+owner) },
	}
	e.open = func(t *testing.T, o clientOpts) *lockClient {
		t.Helper()
		if o.share != nil {
			return o.share
		}
		lc := &lockClient{lease: true}
		var counter *byteCounter
		dsn := dsn
		if kind != "sqlite" {
			server := serverAddr(kind, endpoint)
			if o.upstream != "" {
				server = o.upstream
			}
			if o.proxied {
				// client → fault proxy → byte counter → server: the counter
				// measures an acquire's answer for row 1's cut.
				counter = startByteCounter(t, server)
				p, err := faultproxy.Start(counter.addr)
				if err != nil {
					t.Fatalf("faultproxy.Start(%q) = %v", counter.addr, err)
				}
				t.Cleanup(p.Close)
				lc.proxy, server = p, p.Addr
			}
			ep, err := withServer(kind, endpoint, server, o.appName)
			if err != nil {
				t.Fatalf("%s endpoint: %v", kind, err)
			}
			_, dsn = sqlDriverDSN(kind, ep)
		}
		db, err := sql.Open(driver, dsn)
		if err != nil {
			t.Fatalf("sql.Open(%s) = %v", driver, err)
		}
		t.Cleanup(func() { db.Close() })
		if o.pool > 0 {
			db.SetMaxOpenConns(o.pool)
			db.SetMaxIdleConns(o.pool) // see sqllock's doc: no reconnect per burst
		}
		ttl := sqlTTL
		if o.ttl > 0 {
			ttl = o.ttl
		}
		// A proxied client does not LISTEN: the process's one LISTEN
		// connection must not ride on a link a drill cuts (its waiters are
		// woken by releases in this process, and by backoff).
		c, err := sqllock.New(db, sqllock.Options{TTL: ttl, NoListen: o.proxied})
		if err != nil {
			t.Fatalf("sqllock.New = %v", err)
		}
		t.Cleanup(func() { c.Close() })
		// Warm: the schema is checked, the server identified and (pgx)
		// the acquire and release statements prepared on the pool's
		// connection now, so the drill's first Lock is one acquire and a
		// release one statement: a fault on "the response" then hits the
		// statement, not a preparation before it.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := sqlWarm(ctx, c); err != nil {
			t.Fatalf("%s: warming = %v", kind, err)
		}
		lc.mutex, lc.entries = sqlMutex(c), sqlEntries(c)
		lc.close = func() error {
			err := c.Close()
			if errors.Is(err, baton.ErrClosed) {
				err = nil
			}
			return err
		}
		if counter != nil {
			lc.bytes = counter
			lc.cutResponse = func(t *testing.T) error { return cutLastByte(t, lc, counter) }
		}
		return lc
	}
	scanner, err := sqllock.New(admin, sqllock.Options{TTL: sqlTTL})
	if err != nil {
		t.Fatalf("sqllock.New = %v", err)
	}
	t.Cleanup(func() { scanner.Close() })
	e.scan = sqlEntries(scanner)
	return e
}

// sqlWarm readies c as its first use would, on a scratch name of its own:
// the schema checked, the server identified, the acquire and release
// statements prepared. The name's row stays behind, free.
func sqlWarm(ctx context.Context, c *baton.Client) error {
	m, err := c.Mutex("drill/warm/" + batonengine.NewOwnerID()[:12])
	if err != nil {
		return err
	}
	l, err := m.TryLock(ctx)
	if err != nil {
		return fmt.Errorf("warming TryLock: %w", err)
	}
	if err := l.Release(ctx); err != nil {
		return fmt.Errorf("warming Release: %w", err)
	}
	return nil
}

// sqlEntries is the orphan scan of a SQL client: the owned rows of a name
// as "mode/owner", read with Inspect. A holder's row whose lease expired
// is listed until an acquire takes it over; a waiter's expired intent row
// is not (its waiter is gone).
func sqlEntries(c *baton.Client) func(context.Context, string) ([]string, error) {
	return func(ctx context.Context, name string) ([]string, error) {
		in, err := c.Inspect(ctx, name)
		if err != nil {
			return nil, err
		}
		var es []string
		for _, e := range in.Holders {
			es = append(es, e.Mode+"/"+e.Owner)
		}
		for _, e := range in.Waiters {
			if !e.Dead {
				es = append(es, e.Mode+"/"+e.Owner)
			}
		}
		return es, nil
	}
}

// cutLastByte arms row 1's fault on a SQL client whose pool is one
// connection: it measures the answer to one acquire on that connection (a
// TryLock of a scratch name, warmed once so the statements are prepared)
// and lets through all of the next answer but its last byte. The
// connection is then closed: the acquire statement was applied, and its
// answer never arrives.
func cutLastByte(t *testing.T, lc *lockClient, counter *byteCounter) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var n int64
	for i := range 2 {
		m, err := lc.mutex(fmt.Sprintf("drill/calibrate/%s/%d", batonengine.NewOwnerID()[:12], i))
		if err != nil {
			return err
		}
		before := counter.down.Load()
		l, err := m.TryLock(ctx)
		n = counter.down.Load() - before
		if err != nil {
			return fmt.Errorf("calibrating TryLock = %v", err)
		}
		if err := l.Release(ctx); err != nil {
			return fmt.Errorf("calibrating Release = %v", err)
		}
	}
	if n < 2 {
		return fmt.Errorf("an acquire's answer measured %d bytes", n)
	}
	t.Logf("an acquire's answer is %d bytes: cut after %d", n, n-1)
	return lc.proxy.CutAfter(faultproxy.Downstream, n-1)
}

// byteCounter is a TCP forwarder to one server that counts the bytes it
// forwards each way.
type byteCounter struct {
	addr     string
	up, down atomic.Int64
	l        net.Listener
	wg       sync.WaitGroup
	mu       sync.Mutex
	conns    []net.Conn
}

func startByteCounter(t *testing.T, upstream string) *byteCounter {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &byteCounter{addr: l.Addr().String(), l: l}
	c.wg.Go(func() { // owner: c; ends when the cleanup closes the listener
		for {
			down, err := l.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", upstream)
			if err != nil {
				down.Close()
				continue
			}
			c.mu.Lock()
			c.conns = append(c.conns, down, up)
			c.mu.Unlock()
			c.wg.Go(func() { io.Copy(countingWriter{down, &c.down}, up); down.Close() })
			c.wg.Go(func() { io.Copy(countingWriter{up, &c.up}, down); up.Close() })
		}
	})
	t.Cleanup(func() {
		l.Close()
		c.mu.Lock()
		for _, x := range c.conns {
			x.Close()
		}
		c.mu.Unlock()
		c.wg.Wait()
	})
	return c
}

type countingWriter struct {
	w io.Writer
	n *atomic.Int64
}

// Write counts b before it writes it: once the reader has a byte, the
// count has it too, so a measure taken between two reads of the count
// holds exactly the bytes delivered between them.
func (w countingWriter) Write(b []byte) (int, error) {
	w.n.Add(int64(len(b)))
	n, err := w.w.Write(b)
	w.n.Add(int64(n - len(b)))
	return n, err
}
