package conformance_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/batontest"
	"github.com/baton-go/baton/batontest/testenv"
	_ "github.com/baton-go/baton/etcdlock"
	"github.com/baton-go/baton/faultproxy"
	"github.com/baton-go/baton/kubelock"
	"github.com/baton-go/baton/memlock"
	_ "github.com/baton-go/baton/redislock"
	"github.com/baton-go/baton/redlock"
	"github.com/baton-go/baton/redlock/redlocktest"
	"github.com/baton-go/baton/sqllock"
	_ "github.com/baton-go/baton/sqllock/sqlite"
	_ "github.com/baton-go/baton/zklock"
)

// row is one engine deployment on a single server (Redlock: its five
// independent servers) as the suites see it.
type row struct {
	name string
	// deploy finds the row's servers (skipping, or failing under CI, when
	// they are not configured) and readies one run of a suite on them.
	deploy func(t *testing.T) deployment
	// ttl is the clients' baton.WithTTL: the session timeout or lease
	// time, short so that the suites' expiries come within seconds.
	ttl time.Duration
	// sessionTTL and cleanupBound are batontest.Engine's.
	sessionTTL, cleanupBound time.Duration
	// mutexOnly marks an engine with no other recipe: its clients hide
	// the others from the suites, which then skip them, and the row checks
	// that the engine refuses them.
	mutexOnly bool
	// parallel runs the row's four suites side by side: they mostly wait
	// for TTLs, each on lock names of its own.
	parallel bool
	// warm takes and frees a lock of its own on every new client before
	// the suite gets it, so that its connections are open before the
	// suite starts a clock: a dozen clients connecting at once through
	// their proxies took longer than a 1.5s TTL's attempt timeout on a
	// loaded two-core host (PostgreSQL forks a backend per connection),
	// which tests the database's connection setup, not the recipes.
	warm bool
	// keep, when set, says which of Inspect's entries the suites count as
	// the lock's entries; nil keeps them all.
	keep func(e baton.Entry, waiting bool) bool
}

// deployment is one suite run's servers.
type deployment struct {
	// hosts are the servers' addresses (host:port), each reached by a
	// client under test through a fault proxy of its own; none for an
	// engine without network.
	hosts []string
	// url is the URL to open on hosts: the proxies' addresses for a
	// client under test, the servers' own for the admin client.
	url func(hosts []string) string
	// dial, when set, opens a client on hosts instead of baton.Open on
	// url: for a setting the engine's URL cannot carry. The clients it
	// makes for the engine are closed at the end of the test.
	dial func(t testing.TB, hosts []string) (*baton.Client, error)
	// kill cuts a client off without telling it when the engine has no
	// network to blackhole (hosts is empty).
	kill func(t testing.TB, c *baton.Client)
}

// redlockTTL is the Redlock clients' lease time.
const redlockTTL = 2 * redlocktest.TTL

// sqlTTL is the row lease time on the SQL servers; a row expires TTL
// after its last renewal executed, and waiters poll at least every TTL/4.
const sqlTTL = 1500 * time.Millisecond

// k8sTTL is the lease time on the kube-apiserver. A lease runs out TTL
// after the other clients saw its last renewal (their watch tells them at
// once), so SessionTTL adds only the watch's and a request's latency.
// Every holder and waiter of a name writes the name's one Lease, and a
// write that lost a race to another is read and sent again. On a loaded
// two-core host (CI: every module's tests at once under -race; here
// reproduced with six busy loops beside the test), where a read and a
// conditional write took 150–700 ms, a semaphore's three holders racing
// nine waiters' refreshes lost ten to fifteen races in a row, and with
// them their leases, at 3s: AtMostN failed 3 runs of 3. With the intents'
// longer life (two TTLs, see kubelock's doc) it failed 1 of 4 at 3s and
// none of 4 at 5s.
const k8sTTL = 5 * time.Second

// liveEntry keeps the entries whose lease has not run out: kubelock lists
// an expired holder or waiter Dead (as the admin client judges it) until
// the next write of its name drops it; it neither holds nor waits.
func liveEntry(e baton.Entry, _ bool) bool { return !e.Dead }

// k8sDial opens a kubelock client on the admin kubeconfig with its
// server replaced by host (a fault proxy's address: the apiserver's
// certificate is valid for 127.0.0.1).
func k8sDial(kubeconfig string) func(t testing.TB, hosts []string) (*baton.Client, error) {
	return func(t testing.TB, hosts []string) (*baton.Client, error) {
		cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
			&clientcmd.ClientConfigLoadingRules{ExplicitPath: kubeconfig}, &clientcmd.ConfigOverrides{})
		rc, err := cc.ClientConfig()
		if err != nil {
			return nil, err
		}
		ns, _, err := cc.Namespace()
		if err != nil {
			return nil, err
		}
		rc.Host = "https://" + hosts[0]
		// As baton.Open's clients: no rate limiter (baton paces itself),
		// protobuf (every watcher decodes every write of a busy Lease).
		rc.QPS, rc.ContentType = -1, "application/vnd.kubernetes.protobuf"
		rc.Dial = (&net.Dialer{Timeout: 5 * time.Second}).DialContext
		cs, err := kubernetes.NewForConfig(rc)
		if err != nil {
			return nil, err
		}
		return kubelock.New(cs, ns, kubelock.Options{TTL: k8sTTL})
	}
}

// sqlEntry keeps every SQL row but a gone waiter's intent: the engine
// leaves it in the table, expired, for the next acquire to reuse; it no
// longer waits, and the engine's own listing of rows (sqllock's tests')
// omits it. A holder's expired row stays counted until it is taken over.
func sqlEntry(e baton.Entry, waiting bool) bool { return !(waiting && e.Dead) }

// rows are the deployments every suite runs against. The TTLs are the
// ones each engine's own runner used; sessionTTL adds the server's expiry
// granularity.
var rows = []row{
	{
		name: "zk",
		deploy: func(t *testing.T) deployment {
			return deployment{
				hosts: []string{testenv.ZK(t)},
				url:   func(hs []string) string { return "zk://" + strings.Join(hs, ",") },
			}
		},
		// The test server has tickTime 200ms and a 400ms minimum, so 1s
		// is granted as asked; it expires a session in buckets of one
		// tickTime.
		ttl:        time.Second,
		sessionTTL: time.Second + 200*time.Millisecond,
	},
	{
		name: "etcd",
		deploy: func(t *testing.T) deployment {
			return deployment{
				hosts: []string{testenv.Etcd(t)},
				url:   func(hs []string) string { return "etcd://" + strings.Join(hs, ",") },
			}
		},
		// etcd's minimum TTL with default server timing (a shorter one is
		// raised to it silently); the lessor checks expiry every 500ms.
		ttl:        2 * time.Second,
		sessionTTL: 2*time.Second + 500*time.Millisecond,
	},
	{
		name: "redis",
		deploy: func(t *testing.T) deployment {
			return deployment{
				hosts: []string{testenv.Redis(t)},
				url:   func(hs []string) string { return "redis://" + hs[0] },
			}
		},
		// A key expires TTL after its last renewal; Redis expires keys
		// actively within ~100ms and on access at once.
		ttl:        1500 * time.Millisecond,
		sessionTTL: 1600 * time.Millisecond,
		parallel:   true,
	},
	{
		name: "redlock",
		deploy: func(t *testing.T) deployment {
			addrs := testenv.Redlock(t)
			prefix := redlocktest.Prefix(t, addrs) // its keys deleted at the end
			return deployment{
				hosts: addrs,
				// Not baton.Open: a redlock:// URL cannot carry NodeTimeout,
				// and its default (TTL/30 = 133ms) is too short here: the
				// suite's fifty contending clients, each behind five fault
				// proxies in one -race process, starve it on a loaded
				// two-core machine, every attempt times out and no one is
				// granted (seen in this runner). So the clients are made by
				// redlock.New, on the go-redis clients and with the
				// NodeTimeout of Redlock's own runner.
				dial: func(t testing.TB, hs []string) (*baton.Client, error) {
					o := redlock.Options{TTL: redlockTTL, NodeTimeout: time.Second}
					return redlock.New(redlocktest.Clients(t, hs), redlocktest.Options(o, prefix))
				},
			}
		},
		// Twice the other Redlock tests' TTL, for the same load. A key
		// expires TTL after its last extension executed; a node whose
		// delete timed out keeps the key until it expires.
		ttl:          redlockTTL,
		sessionTTL:   redlockTTL + 100*time.Millisecond,
		cleanupBound: redlockTTL + 500*time.Millisecond,
		mutexOnly:    true,
	},
	{
		name: "postgres",
		deploy: func(t *testing.T) deployment {
			u, err := url.Parse(testenv.Postgres(t))
			if err != nil {
				t.Fatalf("url.Parse(BATON_TEST_POSTGRES) = %v", err)
			}
			host := u.Host
			if _, _, err := net.SplitHostPort(host); err != nil {
				host = net.JoinHostPort(host, "5432")
			}
			return deployment{
				hosts: []string{host},
				url: func(hs []string) string {
					v := *u
					v.Host = hs[0]
					return v.String()
				},
			}
		},
		ttl:        sqlTTL,
		sessionTTL: sqlTTL + 100*time.Millisecond,
		warm:       true,
		keep:       sqlEntry,
	},
	{
		name: "mysql",
		deploy: func(t *testing.T) deployment {
			// BATON_TEST_MYSQL is a go-sql-driver DSN; baton.Open takes a
			// mysql:// URL.
			cfg, err := mysql.ParseDSN(testenv.MySQL(t))
			if err != nil {
				t.Fatalf("mysql.ParseDSN(BATON_TEST_MYSQL) = %v", err)
			}
			if cfg.Net != "tcp" || len(cfg.Params) > 0 || cfg.TLSConfig != "" {
				t.Fatalf("BATON_TEST_MYSQL: want user[:password]@tcp(host:port)/db, no parameters")
			}
			user := url.User(cfg.User)
			if cfg.Passwd != "" {
				user = url.UserPassword(cfg.User, cfg.Passwd)
			}
			return deployment{
				hosts: []string{cfg.Addr},
				url: func(hs []string) string {
					return (&url.URL{Scheme: "mysql", User: user, Host: hs[0], Path: "/" + cfg.DBName}).String()
				},
			}
		},
		ttl:        sqlTTL,
		sessionTTL: sqlTTL + 100*time.Millisecond,
		warm:       true,
		keep:       sqlEntry,
	},
	{
		name: "sqlite",
		deploy: func(t *testing.T) deployment {
			file := filepath.Join(t.TempDir(), "locks.db")
			return deployment{
				url: func([]string) string { return "sqlite://" + file },
				// SQLite has no network: the client's *sql.DB is closed
				// under it, so every renewal fails and the row expires by
				// the database clock; the client's own Close later closes
				// it again, which database/sql allows.
				kill: func(t testing.TB, c *baton.Client) {
					sc, ok := baton.As[*sqllock.Client](c)
					if !ok {
						t.Fatalf("baton.As[*sqllock.Client] of a %s client failed", c.Engine())
					}
					_ = sc.DB().Close()
				},
			}
		},
		// All the suite's clients (up to 50 at once) share one file and
		// one write lock: under load a release or a renewal can queue
		// behind the others' attempts for over a second, and at 1.5s a
		// holder then loses its lease by deadline in the middle of a
		// mutual-exclusion check. 4s leaves room for that queue.
		ttl:        4 * time.Second,
		sessionTTL: 4*time.Second + 100*time.Millisecond,
		warm:       true,
		keep:       sqlEntry,
	},
	{
		name: "k8s",
		deploy: func(t *testing.T) deployment {
			path := testenv.K8s(t)
			return deployment{
				hosts: []string{testenv.K8sAddr(t)},
				url:   func([]string) string { return "k8s://?kubeconfig=" + path },
				// Not baton.Open: a k8s:// URL names no host (its
				// kubeconfig does), and each client under test must reach
				// the apiserver through its own fault proxy.
				dial: k8sDial(path),
			}
		},
		ttl:        k8sTTL,
		sessionTTL: k8sTTL + 300*time.Millisecond,
		keep:       liveEntry,
		parallel:   true,
	},
	{
		name: "mem",
		deploy: func(*testing.T) deployment {
			// A server of the run's own: mem:// names a process-wide server,
			// made by the first Open with that Open's TTL.
			name := "conformance-" + randomHex()
			return deployment{
				url: func([]string) string { return "mem://" + name },
				// Partition is memlock's network cut: the client is
				// suspended and the server expires its session on time.
				kill: func(t testing.TB, c *baton.Client) {
					mc, ok := baton.As[*memlock.Client](c)
					if !ok {
						t.Fatalf("baton.As[*memlock.Client] of a %s client failed", c.Engine())
					}
					mc.Partition()
				},
			}
		},
		// memlock expires a session exactly on time.
		ttl:        500 * time.Millisecond,
		sessionTTL: 500 * time.Millisecond,
		parallel:   true,
	},
}

// TestConformance runs the mutex, read/write lock, semaphore and election
// suites against every row; the suites skip a recipe an engine lacks.
func TestConformance(t *testing.T) {
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			if r.mutexOnly {
				t.Run("OnlyMutex", r.testOnlyMutex)
			}
			for _, s := range []struct {
				name string
				run  func(*testing.T, batontest.Engine)
			}{
				{"Mutex", batontest.TestMutex},
				{"RWMutex", batontest.TestRWMutex},
				{"Semaphore", batontest.TestSemaphore},
				{"Election", batontest.TestElection},
			} {
				t.Run(s.name, func(t *testing.T) {
					if r.parallel {
						t.Parallel()
					}
					s.run(t, r.engine(t))
				})
			}
		})
	}
}

// engine describes one suite run of r to the suite: every client a
// *baton.Client opened on its own fault proxies, the entries read by an
// admin client that is never killed.
func (r row) engine(t *testing.T) batontest.Engine {
	d := r.deploy(t)
	admin := r.open(t, d, d.hosts)
	t.Cleanup(func() {
		if err := admin.Close(); err != nil {
			t.Errorf("%s: admin Close() = %v", r.name, err)
		}
	})
	return batontest.Engine{
		Name: r.name,
		NewClient: func(t testing.TB) batontest.Client {
			c := r.client(t, d)
			if r.mutexOnly {
				return mutexClient{c}
			}
			return c
		},
		Entries:      func(t testing.TB, name string) []string { return entries(t, admin, name, r.keep) },
		SessionTTL:   r.sessionTTL,
		CleanupBound: r.cleanupBound,
	}
}

// client opens a client under test: through a fault proxy per host, whose
// blackholes are its Kill, or with the deployment's own kill. The suite
// closes it; the proxies close after it (t.Cleanup runs last-in first).
func (r row) client(t testing.TB, d deployment) batontest.Client {
	var (
		c    *baton.Client
		kill func(testing.TB)
	)
	if len(d.hosts) == 0 {
		c = r.open(t, d, nil)
		kill = func(t testing.TB) { d.kill(t, c) }
	} else {
		ps := make([]*faultproxy.Proxy, len(d.hosts))
		addrs := make([]string, len(d.hosts))
		for i, h := range d.hosts {
			p, err := faultproxy.Start(h)
			if err != nil {
				t.Fatalf("faultproxy.Start(%q) = %v", h, err)
			}
			t.Cleanup(p.Close)
			ps[i], addrs[i] = p, p.Addr
		}
		c = r.open(t, d, addrs)
		// Kill partitions the client from every server: its renewals
		// stop, and the servers end its sessions or leases after their
		// TTL.
		kill = func(t testing.TB) {
			for _, p := range ps {
				if err := p.Blackhole(""); err != nil {
					t.Fatalf("Blackhole(%s) = %v", p.Addr, err)
				}
			}
		}
	}
	if r.warm {
		warm(t, c)
	}
	return batontest.FromClient(c, kill)
}

// warm takes and frees a lock of its own on c (see row.warm).
func warm(t testing.TB, c *baton.Client) {
	t.Helper()
	name := "conformance/warm/" + randomHex()
	m, err := c.Mutex(name)
	if err != nil {
		t.Fatalf("warm-up Mutex(%q) = %v", name, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l, err := m.Lock(ctx)
	if err != nil {
		t.Fatalf("warm-up Lock(%q) = %v", name, err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatalf("warm-up Release(%q) = %v", name, err)
	}
}

// open opens d's URL on hosts with the row's options (or dials them), or
// stops the test. The URL carries everything: the environment's BATON_*
// credentials are not read.
func (r row) open(t testing.TB, d deployment, hosts []string) *baton.Client {
	t.Helper()
	var (
		c   *baton.Client
		err error
	)
	if d.dial != nil {
		c, err = d.dial(t, hosts)
	} else {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c, err = baton.Open(ctx, d.url(hosts), baton.WithTTL(r.ttl), baton.WithGetenv(func(string) string { return "" }))
	}
	if err != nil {
		t.Fatalf("%s: open a client: %v", r.name, err)
	}
	return c
}

// entries lists name's holders, waiters and other entries through admin,
// each as its mode and owner: stable while the entry exists, and distinct
// (an owner is a grant's, a waiter's or a node's identity). keep, if set,
// drops those it refuses.
func entries(t testing.TB, admin *baton.Client, name string, keep func(baton.Entry, bool) bool) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	in, err := admin.Inspect(ctx, name)
	if err != nil {
		t.Fatalf("Inspect(%q) = %v", name, err)
	}
	var out []string
	for _, part := range []struct {
		es      []baton.Entry
		waiting bool
	}{{in.Holders, false}, {in.Waiters, true}, {in.Other, false}} {
		for _, e := range part.es {
			if keep == nil || keep(e, part.waiting) {
				out = append(out, e.Mode+" "+e.Owner)
			}
		}
	}
	return out
}

// mutexClient is a suite client with the mutex alone: the recipe suites
// skip an engine whose clients lack theirs.
type mutexClient struct{ batontest.Client }

// testOnlyMutex checks that an engine whose recipe suites are skipped does
// refuse those recipes, with an error wrapping baton.ErrInvalidOption: a
// skip must not hide a recipe that exists.
func (r row) testOnlyMutex(t *testing.T) {
	d := r.deploy(t)
	c := r.open(t, d, d.hosts)
	t.Cleanup(func() { _ = c.Close() })
	name := "conformance/only-mutex/" + randomHex()
	if _, err := c.Mutex(name); err != nil {
		t.Errorf("%s: Mutex(%q) = %v, want nil", r.name, name, err)
	}
	_, errRW := c.RWMutex(name)
	_, errSem := c.Semaphore(name, 2)
	_, errElect := c.Election(name)
	for what, err := range map[string]error{"RWMutex": errRW, "Semaphore": errSem, "Election": errElect} {
		if !errors.Is(err, baton.ErrInvalidOption) {
			t.Errorf("%s: %s(%q) = %v, want an error wrapping %v", r.name, what, name, err, baton.ErrInvalidOption)
		}
	}
}

// randomHex returns 12 random hex digits.
func randomHex() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
