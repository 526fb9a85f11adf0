package main_test

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/redis/go-redis/v9"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/batontest/testenv"
	"github.com/baton-go/baton/etcdlock"
	"github.com/baton-go/baton/faultproxy"
	"github.com/baton-go/baton/redislock"
	"github.com/baton-go/baton/redlock"
	"github.com/baton-go/baton/sqllock"
	"github.com/baton-go/baton/zklock"
)

// servingLine is the exporter's announcement of its address on stderr.
var servingLine = regexp.MustCompile(`serving (https?://[^/\s]+)/`)

// stderrWatch collects a process's stderr, safe to read while it runs,
// and reports the address of the exporter's serving line.
type stderrWatch struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	once sync.Once
	addr chan string
}

func (w *stderrWatch) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(b)
	if m := servingLine.FindSubmatch(w.buf.Bytes()); m != nil {
		w.once.Do(func() { w.addr <- string(m[1]) })
	}
	return len(b), nil
}

func (w *stderrWatch) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// startExporter runs baton exporter on a free loopback port, polling every
// 200ms, and returns its base URL once it serves; names may hold flags.
func startExporter(t *testing.T, backend string, names ...string) (string, *proc, *stderrWatch) {
	t.Helper()
	w := &stderrWatch{addr: make(chan string, 1)}
	args := append([]string{"exporter", "--backend", backend, "--listen", "127.0.0.1:0", "--interval", "200ms"}, names...)
	p := startBatonWith(t, func(c *exec.Cmd) { c.Stderr = w }, nil, args...)
	select {
	case base := <-w.addr:
		return base, p, w
	case <-p.done:
		t.Fatalf("baton exporter exited %d before serving; stderr:\n%s", p.res.code, w)
	case <-time.After(20 * time.Second):
		t.Fatalf("baton exporter did not serve within 20s; stderr:\n%s", w)
	}
	return "", nil, nil
}

// scrape reads /metrics with the Prometheus text parser.
func scrape(t *testing.T, base string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	return mfs
}

// value returns the sample of metric for lock ("" for none), and whether
// there is one.
func value(mfs map[string]*dto.MetricFamily, metric, lock string) (float64, bool) {
	mf := mfs[metric]
	if mf == nil {
		return 0, false
	}
	for _, m := range mf.GetMetric() {
		l := ""
		for _, lp := range m.GetLabel() {
			if lp.GetName() == "lock" {
				l = lp.GetValue()
			}
		}
		if l != lock {
			continue
		}
		switch {
		case m.GetGauge() != nil:
			return m.GetGauge().GetValue(), true
		case m.GetCounter() != nil:
			return m.GetCounter().GetValue(), true
		}
	}
	return 0, false
}

// waitMetrics scrapes until every metric of want has its value for lock,
// and returns the last scrape.
func waitMetrics(t *testing.T, base, lock string, want map[string]float64) map[string]*dto.MetricFamily {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		mfs := scrape(t, base)
		var wrong []string
		for metric, v := range want {
			if got, ok := value(mfs, metric, lock); !ok || got != v {
				wrong = append(wrong, metric)
			}
		}
		if len(wrong) == 0 {
			return mfs
		}
		if time.Now().After(deadline) {
			for _, metric := range wrong {
				got, ok := value(mfs, metric, lock)
				t.Errorf("%s{lock=%q} = %v (present %v), want %v", metric, lock, got, ok, want[metric])
			}
			t.FailNow()
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// herd starts n goroutines that wait for l until the test ends, and
// returns a channel of the leases they get.
func herd(t *testing.T, n int, newLocker func() (baton.Locker, error)) <-chan *baton.Lease {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan *baton.Lease, n)
	var wg sync.WaitGroup
	for range n {
		l, err := newLocker()
		if err != nil {
			t.Fatalf("locker: %v", err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if lease, err := l.Lock(ctx); err == nil {
				got <- lease
			}
		}()
	}
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		close(got)
		for l := range got {
			_ = l.Release(context.Background())
		}
	})
	return got
}

// holdLock takes name with the locker newLocker returns, and releases it
// when the test ends (a lease the test released itself only refuses the
// second release).
func holdLock(t *testing.T, name string, newLocker func() (baton.Locker, error)) *baton.Lease {
	t.Helper()
	m, err := newLocker()
	if err != nil {
		t.Fatalf("Mutex(%q) = %v", name, err)
	}
	lease, err := m.Lock(t.Context())
	if err != nil {
		t.Fatalf("Lock(%q) = %v", name, err)
	}
	t.Cleanup(func() { _ = lease.Release(context.Background()) })
	return lease
}

// stopExporter sends the exporter SIGTERM and wants it to exit 0 within
// 10s; when says what else was going on.
func stopExporter(t *testing.T, p *proc, when string) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if r := p.wait(t, 10*time.Second); r.code != 0 {
		t.Errorf("exporter after SIGTERM%s: exit %d, want 0", when, r.code)
	}
}

// TestExporterZK: a holder and a 100-waiter herd on ZooKeeper, named by a
// PREFIX, show as 101 entries of which 100 wait; ZooKeeper keeps creation
// times (holder age) but no token readable from outside, so the page gets
// a bound and /metrics no holder token.
func TestExporterZK(t *testing.T) {
	addr := testenv.ZK(t)
	ctx := t.Context()
	c, err := zklock.Dial(ctx, []string{addr}, zklock.Options{Chroot: "/baton-cli-test"})
	if err != nil {
		t.Fatalf("zklock.Dial(%s) = %v", addr, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	dir := lockName(t)
	name, other := dir+"/herd", dir+"/quiet"
	for _, n := range []string{name, other} {
		holdLock(t, n, func() (baton.Locker, error) { return c.Mutex(n) })
	}
	herd(t, 100, func() (baton.Locker, error) { return c.Mutex(name) })

	base, _, _ := startExporter(t, "zk://"+addr+"/baton-cli-test", dir+"/*")
	mfs := waitMetrics(t, base, name, map[string]float64{
		"baton_lock_entries": 101, "baton_lock_holders": 1, "baton_lock_waiters": 100,
		"baton_lock_duplicates": 0, "baton_lock_dead_entries": 0,
	})
	waitMetrics(t, base, other, map[string]float64{"baton_lock_entries": 1, "baton_lock_waiters": 0})
	if v, ok := value(mfs, "baton_lock_holder_token", name); ok {
		t.Errorf("baton_lock_holder_token{lock=%q} = %v on ZooKeeper, want no series (unknown from outside)", name, v)
	}
	if v, ok := value(mfs, "baton_lock_holder_age_seconds", name); !ok || v <= 0 {
		t.Errorf("baton_lock_holder_age_seconds{lock=%q} = %v (present %v), want > 0", name, v, ok)
	}
	if v, ok := value(mfs, "baton_lock_oldest_entry_age_seconds", name); !ok || v <= 0 {
		t.Errorf("baton_lock_oldest_entry_age_seconds{lock=%q} = %v (present %v), want > 0", name, v, ok)
	}
	if v, _ := value(mfs, "baton_exporter_up", ""); v != 1 {
		t.Errorf("baton_exporter_up = %v, want 1", v)
	}
	if v, ok := value(mfs, "baton_exporter_scrape_errors_total", ""); !ok || v != 0 {
		t.Errorf("baton_exporter_scrape_errors_total = %v (present %v), want 0", v, ok)
	}

	snap := apiLocks(t, base)
	l := snap.lock(t, name)
	if l.TokenBound == nil || *l.TokenBound == 0 {
		t.Errorf("/api/locks %q token_bound = %v, want the directory's bound", name, l.TokenBound)
	}
	if len(l.Holders) != 1 || len(l.Waiters) != 100 {
		t.Errorf("/api/locks %q: %d holders and %d waiters, want 1 and 100", name, len(l.Holders), len(l.Waiters))
	}
	host, _ := os.Hostname()
	for _, e := range append(l.Holders, l.Waiters...) {
		if e.Host != host || e.PID != os.Getpid() || e.Program != filepath.Base(os.Args[0]) {
			t.Errorf("/api/locks %q entry %+v, want this process: host %q, pid %d, program %q", name, e, host, os.Getpid(), filepath.Base(os.Args[0]))
			break
		}
	}
}

// apiSnapshot is what the tests read of /api/locks.
type apiSnapshot struct {
	Backend string    `json:"backend"`
	Up      bool      `json:"up"`
	Locks   []apiLock `json:"locks"`
}

type apiLock struct {
	Name       string     `json:"name"`
	TokenBound *uint64    `json:"token_bound"`
	Error      string     `json:"error"`
	Holders    []apiEntry `json:"holders"`
	Waiters    []apiEntry `json:"waiters"`
	Other      []apiEntry `json:"other"`
}

type apiEntry struct {
	Owner   string  `json:"owner"`
	Token   *uint64 `json:"token"`
	Host    string  `json:"host"`
	PID     int     `json:"pid"`
	Program string  `json:"program"`
	Expired bool    `json:"expired"`
	SeenMS  int64   `json:"seen_ms"`
}

func apiLocks(t *testing.T, base string) apiSnapshot {
	t.Helper()
	resp, err := http.Get(base + "/api/locks")
	if err != nil {
		t.Fatalf("GET /api/locks: %v", err)
	}
	defer resp.Body.Close()
	var s apiSnapshot
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		t.Fatalf("decode /api/locks: %v", err)
	}
	return s
}

func (s apiSnapshot) lock(t *testing.T, name string) apiLock {
	t.Helper()
	for _, l := range s.Locks {
		if l.Name == name {
			return l
		}
	}
	t.Fatalf("/api/locks has no lock %q: %+v", name, s)
	return apiLock{}
}

// redisLocks returns a redislock client of the test Redis.
func redisLocks(t *testing.T) (*baton.Client, string) {
	t.Helper()
	addr := testenv.Redis(t)
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	c, err := redislock.New(rdb, redislock.Options{})
	if err != nil {
		t.Fatalf("redislock.New() = %v", err)
	}
	t.Cleanup(func() { _ = c.Close(); _ = rdb.Close() })
	return c, "redis://" + addr
}

// TestExporterRedis: the holder's token on /metrics is the lease's token,
// exactly; two waiters wait; after the release the next holder's larger
// token replaces it.
func TestExporterRedis(t *testing.T) {
	c, url := redisLocks(t)
	name := lockName(t)
	first := holdLock(t, name, func() (baton.Locker, error) { return c.Mutex(name) })
	next := herd(t, 2, func() (baton.Locker, error) { return c.Mutex(name) })
	base, _, _ := startExporter(t, url, name)
	waitMetrics(t, base, name, map[string]float64{
		"baton_lock_entries": 3, "baton_lock_holders": 1, "baton_lock_waiters": 2,
		"baton_lock_holder_token": float64(first.Token()),
	})
	if err := first.Release(t.Context()); err != nil {
		t.Fatalf("Release() = %v", err)
	}
	var second *baton.Lease
	select {
	case second = <-next:
		defer func() { _ = second.Release(context.Background()) }()
	case <-time.After(20 * time.Second):
		t.Fatal("no waiter was granted within 20s of the release")
	}
	if second.Token() <= first.Token() {
		t.Fatalf("next token %d <= first %d", second.Token(), first.Token())
	}
	waitMetrics(t, base, name, map[string]float64{
		"baton_lock_holders": 1, "baton_lock_waiters": 1, "baton_lock_holder_token": float64(second.Token()),
	})
}

// TestExporterPostgres: on PostgreSQL a holder row and a waiter's intent
// row: the token is the row's, exactly.
func TestExporterPostgres(t *testing.T) {
	url := testenv.Postgres(t)
	db, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatalf("sql.Open() = %v", err)
	}
	t.Cleanup(func() { _ = db.Close() })
	c, err := sqllock.New(db, sqllock.Options{})
	if err != nil {
		t.Fatalf("sqllock.New() = %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	name := lockName(t)
	held := holdLock(t, name, func() (baton.Locker, error) { return c.Mutex(name) })
	herd(t, 1, func() (baton.Locker, error) { return c.Mutex(name) })
	base, _, _ := startExporter(t, url, name)
	waitMetrics(t, base, name, map[string]float64{
		"baton_lock_entries": 2, "baton_lock_holders": 1, "baton_lock_waiters": 1,
		"baton_lock_holder_token": float64(held.Token()),
	})
}

// TestExporterExit: usage errors exit 64 (a PREFIX where the engine cannot
// list), an unreachable backend 69, refused credentials 77; the password
// of the URL appears nowhere.
func TestExporterExit(t *testing.T) {
	redisAddr := testenv.Redis(t)
	const secret = "s3cr3t-pass"
	tests := []struct {
		name string
		args []string
		want int
	}{
		{"no name", []string{"exporter", "--backend", "redis://" + redisAddr}, 64},
		{"bad interval", []string{"exporter", "--backend", "redis://" + redisAddr, "--interval", "0", "x"}, 64},
		{"prefix on redis", []string{"exporter", "--backend", "redis://" + redisAddr, "jobs/*"}, 64},
		{"listen bogus", []string{"exporter", "--backend", "redis://" + redisAddr, "--listen", "bogus", "x"}, 64},
		{"listen no port", []string{"exporter", "--backend", "redis://" + redisAddr, "--listen", "127.0.0.1", "x"}, 64},
		{"listen port too big", []string{"exporter", "--backend", "redis://" + redisAddr, "--listen", "127.0.0.1:99999", "x"}, 64},
		{"listen bad host", []string{"exporter", "--backend", "redis://" + redisAddr, "--listen", "bad_host!:9187", "x"}, 64},
		{"unreachable", []string{"exporter", "--backend", "redis://:" + secret + "@127.0.0.1:1", "--connect-timeout", "1s", "x"}, 69},
		{"refused", []string{"exporter", "--backend", "redis://nobody:" + secret + "@" + redisAddr, "--connect-timeout", "2s", "x"}, 77},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := runBaton(t, nil, tc.args...)
			if r.code != tc.want {
				t.Errorf("baton %v exit = %d, want %d; stderr:\n%s", tc.args, r.code, tc.want, r.stderr)
			}
			if strings.Contains(r.stderr+r.stdout, secret) {
				t.Errorf("baton %v printed the password:\n%s", tc.args, r.stderr)
			}
		})
	}
}

// TestExporterRedacts: the page's data and the metrics of a backend whose
// URL carries a password never show it.
func TestExporterRedacts(t *testing.T) {
	url := testenv.Postgres(t)
	const secret = "hunter2-not-used"
	// PostgreSQL trusts the test user: the password is sent and ignored.
	withPass := strings.Replace(url, "postgres@", "postgres:"+secret+"@", 1)
	if withPass == url {
		testenv.Unavailable(t, "BATON_TEST_POSTGRES "+strconv.Quote(url)+" has no postgres@ to add a password to (scripts/servers.sh sets one)")
	}
	base, _, w := startExporter(t, withPass, lockName(t))
	for _, path := range []string{"/api/locks", "/metrics", "/"} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		var b bytes.Buffer
		_, _ = b.ReadFrom(resp.Body)
		resp.Body.Close()
		if strings.Contains(b.String(), secret) {
			t.Errorf("GET %s shows the password", path)
		}
	}
	if s := apiLocks(t, base); !strings.Contains(s.Backend, "***") {
		t.Errorf("/api/locks backend = %q, want the URL with its password hidden", s.Backend)
	}
	if strings.Contains(w.String(), secret) {
		t.Errorf("stderr shows the password:\n%s", w)
	}
}

// TestExporterEtcd: on etcd the token is the entry's create revision, read
// exactly from outside; a waiter queues behind the holder.
func TestExporterEtcd(t *testing.T) {
	url := etcdURL(t)
	cli := rawEtcd(t)
	c, err := etcdlock.New(cli, etcdlock.Options{})
	if err != nil {
		t.Fatalf("etcdlock.New() = %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	name := lockName(t)
	held := holdLock(t, name, func() (baton.Locker, error) { return c.Mutex(name) })
	herd(t, 3, func() (baton.Locker, error) { return c.Mutex(name) })
	base, p, _ := startExporter(t, url, name)
	waitMetrics(t, base, name, map[string]float64{
		"baton_lock_entries": 4, "baton_lock_holders": 1, "baton_lock_waiters": 3,
		"baton_lock_holder_token": float64(held.Token()), "baton_lock_dead_entries": 0, "baton_lock_duplicates": 0,
	})
	// SIGTERM stops the exporter cleanly: exit 0, promptly.
	stopExporter(t, p, "")
}

// TestExporterRedlock: the holder's token is the grant's quorum token
// that the nodes store once the majority is reached.
func TestExporterRedlock(t *testing.T) {
	addrs := testenv.Redlock(t)
	nodes := make([]redis.UniversalClient, len(addrs))
	for i, a := range addrs {
		rdb := redis.NewClient(&redis.Options{Addr: a})
		nodes[i] = rdb
		t.Cleanup(func() { _ = rdb.Close() })
	}
	c, err := redlock.New(nodes, redlock.Options{})
	if err != nil {
		t.Fatalf("redlock.New() = %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	name := lockName(t)
	held := holdLock(t, name, func() (baton.Locker, error) { return c.Mutex(name) })
	base, _, _ := startExporter(t, "redlock://"+strings.Join(addrs, ","), name)
	waitMetrics(t, base, name, map[string]float64{
		"baton_lock_entries": 1, "baton_lock_holders": 1, "baton_lock_waiters": 0,
		"baton_lock_holder_token": float64(held.Token()),
	})
}

// TestExporterBackendDown: when the backend stops answering, up drops to
// 0, failed polls are counted and the lock's series go away rather than
// going stale; when it answers again they come back. An open event stream
// does not hold up SIGTERM.
func TestExporterBackendDown(t *testing.T) {
	c, _ := redisLocks(t)
	px, err := faultproxy.Start(testenv.Redis(t))
	if err != nil {
		t.Fatalf("faultproxy.Start() = %v", err)
	}
	t.Cleanup(px.Close)
	name := lockName(t)
	held := holdLock(t, name, func() (baton.Locker, error) { return c.Mutex(name) })
	base, p, _ := startExporter(t, "redis://"+px.Addr, "--connect-timeout", "1s", name)
	live := map[string]float64{"baton_lock_holder_token": float64(held.Token())}
	waitMetrics(t, base, name, live)

	events, err := http.Get(base + "/events")
	if err != nil {
		t.Fatalf("GET /events: %v", err)
	}
	defer events.Body.Close()
	line, err := bufio.NewReader(events.Body).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "data: {") || !strings.Contains(line, strconv.Quote(name)) {
		t.Fatalf("first event = %q, %v; want a data line with the snapshot of %q", line, err, name)
	}

	px.Refuse()
	deadline := time.Now().Add(20 * time.Second)
	for {
		mfs := scrape(t, base)
		up, _ := value(mfs, "baton_exporter_up", "")
		errs, _ := value(mfs, "baton_exporter_scrape_errors_total", "")
		_, stale := value(mfs, "baton_lock_holder_token", name)
		if up == 0 && errs > 0 && !stale {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("backend refused: up = %v, scrape errors = %v, lock series present %v; want 0, > 0, false", up, errs, stale)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if s := apiLocks(t, base); s.Up || s.lock(t, name).Error == "" {
		t.Errorf("/api/locks while refused: up %v, error %q; want down with the lock's error", s.Up, s.lock(t, name).Error)
	}
	if err := px.Accept(); err != nil {
		t.Fatalf("Accept() = %v", err)
	}
	waitMetrics(t, base, "", map[string]float64{"baton_exporter_up": 1})
	waitMetrics(t, base, name, live)

	stopExporter(t, p, " with an open event stream")
}

// TestExporterHolderLabels: /api/locks names the holder's host, pid and
// program; /metrics carries them as labels only with --holder-labels, in
// one baton_lock_holder_info series per holding process.
func TestExporterHolderLabels(t *testing.T) {
	c, url := redisLocks(t)
	name := lockName(t)
	holdLock(t, name, func() (baton.Locker, error) { return c.Mutex(name) })
	host, _ := os.Hostname()
	pid, prog := strconv.Itoa(os.Getpid()), filepath.Base(os.Args[0])

	base, p, _ := startExporter(t, url, name)
	mfs := waitMetrics(t, base, name, map[string]float64{"baton_lock_holders": 1})
	if mf := mfs["baton_lock_holder_info"]; mf != nil {
		t.Errorf("baton_lock_holder_info without --holder-labels: %v", mf)
	}
	if h := apiLocks(t, base).lock(t, name).Holders; len(h) != 1 || h[0].Host != host || strconv.Itoa(h[0].PID) != pid || h[0].Program != prog {
		t.Errorf("/api/locks holders = %+v, want host %q, pid %s, program %q", h, host, pid, prog)
	}
	stopExporter(t, p, "")

	base, _, _ = startExporter(t, url, "--holder-labels", name)
	mfs = waitMetrics(t, base, name, map[string]float64{"baton_lock_holder_info": 1})
	ms := mfs["baton_lock_holder_info"].GetMetric()
	if len(ms) != 1 {
		t.Fatalf("baton_lock_holder_info has %d series, want 1: %v", len(ms), ms)
	}
	labels := map[string]string{}
	for _, lp := range ms[0].GetLabel() {
		labels[lp.GetName()] = lp.GetValue()
	}
	if labels["lock"] != name || labels["host"] != host || labels["pid"] != pid || labels["program"] != prog {
		t.Errorf("baton_lock_holder_info labels = %v, want lock %s, host %s, pid %s, program %s", labels, name, host, pid, prog)
	}
}
