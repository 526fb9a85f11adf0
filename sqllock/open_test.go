package sqllock_test

import (
	"context"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/batontest/testenv"
	"github.com/baton-go/baton/sqllock"
	"github.com/go-sql-driver/mysql"
)

// openURLs are the three databases as baton.Open takes them.
var openURLs = []struct {
	engine string
	url    func(t *testing.T) string
}{
	{"postgres", func(t *testing.T) string { return testenv.Postgres(t) }},
	{"mysql", mysqlURL},
	{"sqlite", func(t *testing.T) string { return "sqlite://" + filepath.Join(t.TempDir(), "locks.db") }},
}

// mysqlURL turns the test server's go-sql-driver DSN into a mysql:// URL.
func mysqlURL(t *testing.T) string {
	t.Helper()
	cfg, err := mysql.ParseDSN(testenv.MySQL(t))
	if err != nil {
		t.Fatalf("mysql.ParseDSN(BATON_TEST_MYSQL) = %v", err)
	}
	u := url.URL{Scheme: "mysql", Host: cfg.Addr, Path: "/" + cfg.DBName, User: url.UserPassword(cfg.User, cfg.Passwd)}
	if cfg.Passwd == "" {
		u.User = url.User(cfg.User)
	}
	return u.String()
}

// openClient opens raw with baton.Open, closed at the end of t.
func openClient(t *testing.T, raw string, opts ...baton.Option) *baton.Client {
	t.Helper()
	c, err := baton.Open(opCtx(t, 10*time.Second), raw, append([]baton.Option{baton.WithTTL(2 * time.Second)}, opts...)...)
	if err != nil {
		t.Fatalf("baton.Open(%s) = %v", raw, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// TestOpen: baton.Open of each SQL URL gives a client of that engine whose
// grants record this process: Inspect shows the holder's host, pid and
// labels with its token and owner, a later grant's token is greater, and
// nothing is listed once it is released. baton.As hands back the
// *sqllock.Client.
func TestOpen(t *testing.T) {
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range openURLs {
		t.Run(e.engine, func(t *testing.T) {
			c := openClient(t, e.url(t), baton.WithLabel("team", "locks"))
			if c.Engine() != e.engine {
				t.Errorf("Engine() = %q, want %q", c.Engine(), e.engine)
			}
			if sc, ok := baton.As[*sqllock.Client](c); !ok || sc.DB() == nil {
				t.Errorf("baton.As[*sqllock.Client] = %v, %v; want the engine's client", sc, ok)
			}
			name := uniqueName("open")
			m, err := c.Mutex(name)
			if err != nil {
				t.Fatalf("Mutex() = %v", err)
			}
			ctx := opCtx(t, 20*time.Second)
			l1, err := m.Lock(ctx)
			if err != nil {
				t.Fatalf("Lock() = %v", err)
			}
			in, err := c.Inspect(ctx, name)
			if err != nil {
				t.Fatalf("Inspect() = %v", err)
			}
			if len(in.Holders) != 1 || len(in.Waiters) != 0 || in.Engine != e.engine || in.Name != name {
				t.Fatalf("Inspect() = %+v, want one holder", in)
			}
			h := in.Holders[0]
			if h.Host != host || h.PID != os.Getpid() || h.Program == "" || h.Labels["team"] != "locks" {
				t.Errorf("holder record %+v, want host %q, pid %d, a program and the label team=locks", h.Process, host, os.Getpid())
			}
			if h.Mode != "mutex" || h.Token != l1.Token() || h.Owner != l1.Owner() || h.Left <= 0 || h.Dead {
				t.Errorf("holder %+v, want a live mutex with token %d and owner %q", h, l1.Token(), l1.Owner())
			}
			if err := l1.Release(ctx); err != nil {
				t.Fatalf("Release() = %v", err)
			}
			l2, err := m.Lock(ctx)
			if err != nil {
				t.Fatalf("second Lock() = %v", err)
			}
			if l2.Token() <= l1.Token() {
				t.Errorf("second grant's token %d, want > %d", l2.Token(), l1.Token())
			}
			if err := l2.Release(ctx); err != nil {
				t.Fatalf("Release() = %v", err)
			}
			if in, err := c.Inspect(ctx, name); err != nil || len(in.Holders)+len(in.Waiters)+len(in.Other) != 0 {
				t.Errorf("Inspect() after the release = %+v, %v; want nothing", in, err)
			}
		})
	}
}

// TestOpenInspectRecipes: Inspect through baton.Open lists a semaphore's
// holders with the N they took, and a read/write lock's writer with a
// waiting reader after it, the waiter's own holder record included.
func TestOpenInspectRecipes(t *testing.T) {
	for _, e := range openURLs {
		t.Run(e.engine, func(t *testing.T) {
			c := openClient(t, e.url(t))
			ctx := opCtx(t, 20*time.Second)
			sem, err := c.Semaphore(uniqueName("sem"), 3)
			if err != nil {
				t.Fatal(err)
			}
			for range 2 {
				l, err := sem.Acquire(ctx)
				if err != nil {
					t.Fatalf("Acquire() = %v", err)
				}
				defer func() { _ = l.Release(ctx) }()
			}
			in, err := c.Inspect(ctx, sem.Name())
			if err != nil || len(in.Holders) != 2 || in.Permits != 3 || in.Holders[0].Mode != "permit" {
				t.Errorf("Inspect(semaphore) = %+v, %v; want two permit holders of N=3", in, err)
			}

			rw, err := c.RWMutex(uniqueName("rw"))
			if err != nil {
				t.Fatal(err)
			}
			w, err := rw.Lock(ctx)
			if err != nil {
				t.Fatalf("Lock() = %v", err)
			}
			rctx, stop := context.WithCancel(ctx)
			done := make(chan error, 1)
			go func() {
				l, err := rw.RLock(rctx)
				if err == nil {
					_ = l.Release(context.Background())
				}
				done <- err
			}()
			for end := time.Now().Add(5 * time.Second); len(in.Waiters) == 0 && time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
				if in, err = c.Inspect(ctx, rw.Name()); err != nil {
					t.Fatalf("Inspect(rw) = %v", err)
				}
			}
			if len(in.Holders) != 1 || in.Holders[0].Mode != "write" || len(in.Waiters) != 1 ||
				in.Waiters[0].Mode != "read" || in.Waiters[0].PID != os.Getpid() {
				t.Errorf("Inspect(rw) = %+v, want the writer and a waiting reader of this process", in)
			}
			stop()
			if err := <-done; !errors.Is(err, context.Canceled) {
				t.Errorf("RLock behind a writer = %v, want context.Canceled", err)
			}
			_ = w.Release(ctx)
		})
	}
}

// TestOpenNoMigrate: a client that Open made and SetNoMigrate then ran
// no DDL on (a read-only tool's) inspects a database without the schema,
// refuses to lock there with an error saying to run Migrate, and leaves
// the database without the table.
func TestOpenNoMigrate(t *testing.T) {
	c := openClient(t, "sqlite://"+filepath.Join(t.TempDir(), "locks.db"))
	sc, _ := baton.As[*sqllock.Client](c)
	sc.SetNoMigrate()
	ctx := opCtx(t, 10*time.Second)
	name := uniqueName("readonly")
	if in, err := c.Inspect(ctx, name); err != nil || len(in.Holders) != 0 {
		t.Errorf("Inspect() without the schema = %+v, %v; want nothing", in, err)
	}
	m, err := c.Mutex(name)
	if err != nil {
		t.Fatal(err)
	}
	if l, err := m.TryLock(ctx); err == nil || !strings.Contains(err.Error(), "Migrate") {
		if l != nil {
			_ = l.Release(ctx)
		}
		t.Errorf("TryLock() = %v, want an error saying to run Migrate", err)
	}
	var n int
	if err := sc.DB().QueryRowContext(ctx, `SELECT COUNT(*) FROM sqlite_master WHERE name = ?`, sc.Table()).Scan(&n); err != nil || n != 0 {
		t.Errorf("the table after a SetNoMigrate client's use: %d, %v; want none", n, err)
	}
}

// TestOpenRefused: an unreachable server fails Open with
// baton.ErrUnavailable within the connect timeout; an unknown PostgreSQL
// role or MySQL user with baton.ErrAuth at once; no error shows the
// password.
func TestOpenRefused(t *testing.T) {
	const secret = "s3cr3t-pw"
	pg, err := url.Parse(testenv.Postgres(t))
	if err != nil {
		t.Fatal(err)
	}
	pg.User = url.UserPassword("baton_norole", secret)
	my, err := url.Parse(mysqlURL(t))
	if err != nil {
		t.Fatal(err)
	}
	my.User = url.UserPassword("baton_nouser", secret)
	tests := []struct {
		name, url string
		want      error
	}{
		{"postgres unreachable", "postgres://u:" + secret + "@127.0.0.1:1/baton?sslmode=disable", baton.ErrUnavailable},
		{"mysql unreachable", "mysql://u:" + secret + "@127.0.0.1:1/baton", baton.ErrUnavailable},
		{"postgres unknown role", pg.String(), baton.ErrAuth},
		{"mysql unknown user", my.String(), baton.ErrAuth},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			c, err := baton.Open(context.Background(), tt.url, baton.WithConnectTimeout(500*time.Millisecond))
			if err == nil {
				_ = c.Close()
				t.Fatalf("Open() = a client, want an error wrapping %v", tt.want)
			}
			if !errors.Is(err, tt.want) {
				t.Errorf("Open() = %v, want an error wrapping %v", err, tt.want)
			}
			if took := time.Since(start); took > 2*time.Second {
				t.Errorf("Open() took %v with a 500ms connect timeout", took)
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("Open() = %v: shows the password", err)
			}
		})
	}
}

// TestCheckURL: the URLs the SQL engine cannot use fail baton.CheckURL,
// offline, with an error wrapping baton.ErrInvalidOption that says why
// and never shows the password.
func TestCheckURL(t *testing.T) {
	const secret = "Zq9xSecret"
	caEnv := func(k string) string {
		if k == "BATON_SQL_CACERT" {
			return "/nonexistent/ca.pem"
		}
		return ""
	}
	tests := []struct {
		url, want string
		getenv    func(string) string
	}{
		{"sqlite:///tmp/x.db?mode=ro", "take no parameters", nil},
		{"sqlite://relative/x.db", "absolute path", nil},
		{"sqlite://", "no file", nil},
		{"sqlite://bob@/tmp/x.db", "no users", nil},
		{"mysql://u@127.0.0.1:1/db?parseTime=false", "only tls=", nil},
		{"mysql://u@127.0.0.1:1/db?tls=maybe", "want true, false, skip-verify or preferred", nil},
		{"mysql:///db", "no host", nil},
		{"mysql://u@h/a/b", "one name after the host", nil},
		{"mysql://u@h/db?tls=false", "need tls=true", caEnv},
		{"mysql://u@h/db?tls=true", "BATON_SQL_CACERT", caEnv},
		{"postgres://u:" + secret + "@127.0.0.1/db?sslmode=bogus", "sslmode", nil},
		{"postgres://127.0.0.1:99999/db", "port", nil},
	}
	for _, tt := range tests {
		var opts []baton.Option
		if tt.getenv != nil {
			opts = append(opts, baton.WithGetenv(tt.getenv))
		}
		err := baton.CheckURL(tt.url, opts...)
		if !errors.Is(err, baton.ErrInvalidOption) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("CheckURL(%s) = %v, want an invalid option saying %q", tt.url, err, tt.want)
		}
		if err != nil && strings.Contains(err.Error(), secret) {
			t.Errorf("CheckURL(%s) = %v: shows the password", tt.url, err)
		}
	}
	for _, good := range []string{"postgres://u:p@h1:5432,h2:5433/db?sslmode=verify-full", "postgresql:///db?host=/tmp",
		"mysql://u:p@h/db?tls=true", "sqlite:///tmp/a@b/locks.db"} {
		if err := baton.CheckURL(good); err != nil {
			t.Errorf("CheckURL(%s) = %v, want nil", good, err)
		}
	}
}

// TestHosts: Hosts reads the hosts a URL dials as its driver does,
// offline: PostgreSQL's list, its host= parameter (a socket directory),
// MySQL's host; none for SQLite.
func TestHosts(t *testing.T) {
	tests := []struct {
		url  string
		want []string
	}{
		{"postgres://u:p@a.example:5432,b.example:5433/db?sslmode=disable", []string{"a.example", "b.example"}},
		{"postgres://u@a.example/db?sslmode=prefer", []string{"a.example"}},
		{"postgresql:///db?host=/tmp/sockets", []string{"/tmp/sockets"}},
		{"mysql://u:p@db.example:3307/db", []string{"db.example"}},
		{"sqlite:///tmp/locks.db", nil},
	}
	for _, tt := range tests {
		got, err := sqllock.Hosts(tt.url)
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("Hosts(%s) = %q, %v; want %q", tt.url, got, err, tt.want)
		}
	}
	if _, err := sqllock.Hosts("postgres://h/db?sslmode=bogus"); !errors.Is(err, baton.ErrInvalidOption) {
		t.Errorf("Hosts of a bad URL = %v, want an invalid option", err)
	}
}
