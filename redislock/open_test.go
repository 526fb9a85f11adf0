package redislock_test

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/batontest/testenv"
	"github.com/baton-go/baton/engine"
	_ "github.com/baton-go/baton/redislock"
)

// openTTL is the TTL of the clients baton.Open makes in these tests:
// short, so that a hold of a few TTLs proves the renewals keep the holder
// record.
const openTTL = time.Second

// openURL opens url with the options, closed at the end of the test.
func openURL(t *testing.T, url string, opts ...baton.Option) *baton.Client {
	t.Helper()
	c, err := baton.Open(opCtx(t, 10*time.Second), url, append([]baton.Option{baton.WithTTL(openTTL)}, opts...)...)
	if err != nil {
		t.Fatalf("baton.Open(%s) = %v", url, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// inspect reads name through c or stops the test.
func inspect(t *testing.T, c *baton.Client, name string) baton.Inspection {
	t.Helper()
	in, err := c.Inspect(opCtx(t, 5*time.Second), name)
	if err != nil {
		t.Fatalf("Inspect(%q) = %v", name, err)
	}
	return in
}

// checkHolder fails t unless in has one holder of mode, with token and
// this process's holder record (program "opentest", label team=pay).
func checkHolder(t *testing.T, in baton.Inspection, mode string, token uint64) {
	t.Helper()
	host, _ := os.Hostname()
	if len(in.Holders) != 1 {
		t.Fatalf("Inspect(%q).Holders = %+v, want one %s holder", in.Name, in.Holders, mode)
	}
	h := in.Holders[0]
	if h.Mode != mode || h.Token != token || h.Owner == "" || h.Left <= 0 || h.Left > openTTL {
		t.Errorf("holder = %+v, want mode %s, token %d, an owner, 0 < Left ≤ %v", h, mode, token, openTTL)
	}
	if h.Host != host || h.PID != os.Getpid() || h.Program != "opentest" || h.Labels["team"] != "pay" {
		t.Errorf("holder record = %+v, want host %q, pid %d, program opentest, label team=pay", h.Process, host, os.Getpid())
	}
}

// TestOpen: baton.Open on a redis:// URL gives a client whose grants
// record this process, renewed with the lease (it is still there after
// three TTLs) and gone with the release, for the mutex, both sides of the
// read/write lock and the semaphore; tokens increase; a waiter shows in
// serving order.
func TestOpen(t *testing.T) {
	t.Parallel()
	url := "redis://" + redisAddr(t) + "/0"
	c := openURL(t, url, baton.WithProgram("opentest"), baton.WithLabel("team", "pay"))
	if c.Engine() != "redis" {
		t.Errorf("Engine() = %q, want redis", c.Engine())
	}
	name := "open/" + engine.NewOwnerID()[:12]
	m, err := c.Mutex(name)
	if err != nil {
		t.Fatal(err)
	}
	l1, err := m.Lock(opCtx(t, 5*time.Second))
	if err != nil {
		t.Fatalf("Lock = %v", err)
	}
	time.Sleep(3 * openTTL) // renewed, record included
	checkHolder(t, inspect(t, c, name), "mutex", l1.Token())

	other := openURL(t, url)
	mo, err := other.Mutex(name)
	if err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() {
		l, err := mo.Lock(opCtx(t, 10*time.Second))
		if err == nil {
			if l.Token() <= l1.Token() {
				err = errors.New("the second grant's token is not above the first's")
			}
			err = errors.Join(err, l.Release(opCtx(t, 5*time.Second)))
		}
		waited <- err
	}()
	deadline := time.Now().Add(5 * time.Second)
	for in := inspect(t, c, name); len(in.Waiters) == 0; in = inspect(t, c, name) {
		if time.Now().After(deadline) {
			t.Fatalf("Inspect = %+v, want the waiter listed", in)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if w := inspect(t, c, name).Waiters[0]; w.Mode != "mutex" || w.Owner == "" || w.Note == "" {
		t.Errorf("waiter = %+v, want a mutex waiter with its id and a note", w)
	}
	if err := l1.Release(opCtx(t, 5*time.Second)); err != nil {
		t.Fatalf("Release = %v", err)
	}
	if err := <-waited; err != nil {
		t.Fatalf("second Lock: %v", err)
	}

	rw, err := c.RWMutex(name + "/rw")
	if err != nil {
		t.Fatal(err)
	}
	sem, err := c.Semaphore(name+"/sem", 2)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		mode string
		take func(context.Context) (*baton.Lease, error)
		name string
	}{
		{"read", rw.RLock, rw.Name()},
		{"write", rw.Lock, rw.Name()},
		{"permit", sem.Acquire, sem.Name()},
	} {
		l, err := tc.take(opCtx(t, 5*time.Second))
		if err != nil {
			t.Fatalf("%s: %v", tc.mode, err)
		}
		time.Sleep(3 * openTTL)
		checkHolder(t, inspect(t, c, tc.name), tc.mode, l.Token())
		if err := l.Release(opCtx(t, 5*time.Second)); err != nil {
			t.Fatalf("%s: Release = %v", tc.mode, err)
		}
	}
	for _, n := range []string{name, rw.Name(), sem.Name()} {
		if in := inspect(t, c, n); len(in.Holders)+len(in.Waiters)+len(in.Other) != 0 {
			t.Errorf("Inspect(%q) after the releases = %+v, want nothing", n, in)
		}
	}
	rdb := redisClient(t, redisAddr(t))
	for _, k := range []string{"baton:{" + rw.Name() + "}:rw:procs", "baton:{" + sem.Name() + "}:sem:procs"} {
		if n, err := rdb.Exists(opCtx(t, 5*time.Second), k).Result(); err != nil || n != 0 {
			t.Errorf("EXISTS %s after the release = %d, %v; want 0: the last release removes the records", k, n, err)
		}
	}
}

// TestOpenTLS: rediss:// with the CA, the client pair and the ACL user
// from the environment (through WithGetenv) locks every recipe under an
// ACL that admits only the engine's commands, holder records included; a
// wrong password is refused with baton.ErrAuth, never shown.
func TestOpenTLS(t *testing.T) {
	t.Parallel()
	addr := testenv.Require(t, "BATON_TEST_REDIS_TLS", "Redis with TLS and ACL users")
	dir := testenv.Require(t, "BATON_TEST_TLS_DIR", "TLS test certificates")
	pass, err := os.ReadFile(filepath.Join(dir, "redis-baton.pass"))
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{
		"BATON_REDIS_CACERT": filepath.Join(dir, "ca.pem"), "BATON_REDIS_CERT": filepath.Join(dir, "client.pem"),
		"BATON_REDIS_KEY": filepath.Join(dir, "client.key"), "BATON_REDIS_USERNAME": "baton",
		"BATON_REDIS_PASSWORD": strings.TrimSpace(string(pass)),
	}
	getenv := func(k string) string { return env[k] }
	c := openURL(t, "rediss://"+addr, baton.WithGetenv(getenv))
	name := "open-tls/" + engine.NewOwnerID()[:12]
	m, err := c.Mutex(name)
	if err != nil {
		t.Fatal(err)
	}
	rw, err := c.RWMutex(name)
	if err != nil {
		t.Fatal(err)
	}
	sem, err := c.Semaphore(name, 1)
	if err != nil {
		t.Fatal(err)
	}
	for mode, take := range map[string]func(context.Context) (*baton.Lease, error){"mutex": m.Lock, "read": rw.RLock, "permit": sem.Acquire} {
		l, err := take(opCtx(t, 5*time.Second))
		if err != nil {
			t.Fatalf("%s over TLS as the ACL user = %v", mode, err)
		}
		time.Sleep(2 * openTTL)
		if err := l.Release(opCtx(t, 5*time.Second)); err != nil {
			t.Errorf("%s: Release = %v (lost: %v)", mode, err, l.Err())
		}
	}

	env["BATON_REDIS_PASSWORD"] = "wrong-" + env["BATON_REDIS_PASSWORD"]
	_, err = baton.Open(opCtx(t, 10*time.Second), "rediss://"+addr, baton.WithGetenv(getenv))
	if !errors.Is(err, baton.ErrAuth) || strings.Contains(err.Error(), env["BATON_REDIS_PASSWORD"]) {
		t.Errorf("Open with a wrong password = %v, want baton.ErrAuth without the password", err)
	}
}

// TestOpenUnreachable: a server that refuses connections, and one that
// accepts them but never answers, fail Open with baton.ErrUnavailable at
// the connect timeout.
func TestOpenUnreachable(t *testing.T) {
	t.Parallel()
	for _, url := range []string{"redis://127.0.0.1:1", "redis://" + silentListener(t)} {
		start := time.Now()
		_, err := baton.Open(context.Background(), url, baton.WithConnectTimeout(300*time.Millisecond))
		if !errors.Is(err, baton.ErrUnavailable) || time.Since(start) > 2*time.Second {
			t.Errorf("Open(%s) = %v after %v, want baton.ErrUnavailable within 2s", url, err, time.Since(start))
		}
	}
}

// TestCheckURL: baton.CheckURL refuses, offline and with
// baton.ErrInvalidOption, what the CLI refuses, and never shows a
// password.
func TestCheckURL(t *testing.T) {
	t.Parallel()
	missing := func(k string) string {
		if k == "BATON_REDIS_CACERT" {
			return filepath.Join(t.TempDir(), "missing.pem")
		}
		return ""
	}
	for _, tc := range []struct {
		url, want string
		opts      []baton.Option
	}{
		{"rediss://:Pw9xSecret@10.255.255.1:6379?skip_verify=true", "skip_verify", nil},
		{"redis://127.0.0.1:1?dial_timeout=1s", `unknown parameter "dial_timeout"`, nil},
		{"redis://127.0.0.1:1?db=0&max_retries=5", `unknown parameter "max_retries"`, nil},
		{"redis://u:Pw9xSecret@127.0.0.1:1/zero", "zero", nil},
		{"redis://127.0.0.1:99999", "port", nil},
		{"rediss://127.0.0.1:1", "BATON_REDIS_CACERT", []baton.Option{baton.WithGetenv(missing)}},
		{"redis://127.0.0.1:1", "TTL", []baton.Option{baton.WithTTL(100 * time.Millisecond)}},
		{"redis://127.0.0.1:1", "TTL", []baton.Option{baton.WithTTL(1500*time.Millisecond + time.Microsecond)}},
	} {
		err := baton.CheckURL(tc.url, tc.opts...)
		if !errors.Is(err, baton.ErrInvalidOption) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "Pw9xSecret") {
			t.Errorf("CheckURL(%s) = %v, want baton.ErrInvalidOption naming %s, without the password", tc.url, err, tc.want)
		}
	}
	for _, url := range []string{"redis://127.0.0.1:1", "redis://127.0.0.1:1/3?db=2", "rediss://u:p@127.0.0.1:1/0"} {
		if err := baton.CheckURL(url); err != nil {
			t.Errorf("CheckURL(%s) = %v, want nil", url, err)
		}
	}
}

// silentListener returns the address of a listener that accepts
// connections and never answers, closed at the end of the test.
func silentListener(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln.Addr().String()
}
