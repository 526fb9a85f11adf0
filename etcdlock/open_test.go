package etcdlock_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/batontest/testenv"
	"github.com/baton-go/baton/etcdlock"
)

// open returns a client of baton.Open on url, closed at cleanup.
func open(t *testing.T, url string, opts ...baton.Option) *baton.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	c, err := baton.Open(ctx, url, append([]baton.Option{baton.WithTTL(2 * time.Second)}, opts...)...)
	if err != nil {
		t.Fatalf("baton.Open(%q) = %v", url, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// TestOpen: baton.Open on an etcd:// URL gives a *baton.Client whose
// grants carry this process's holder record in their keys' values, which
// Inspect reads back; tokens increase; a released lock inspects empty.
func TestOpen(t *testing.T) {
	name := uniq(t)
	c := open(t, "etcd://"+server.Endpoint, baton.WithLabel("team", "locks"))
	if c.Engine() != "etcd" {
		t.Errorf("Engine() = %q, want etcd", c.Engine())
	}
	m, err := c.Mutex(name)
	if err != nil {
		t.Fatalf("Mutex(%q) = %v", name, err)
	}
	l1 := lock(t, m, name)
	release(t, l1)
	l2 := lock(t, m, name)
	if l2.Token() <= l1.Token() {
		t.Errorf("second grant's token %d, want > the first's %d", l2.Token(), l1.Token())
	}

	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	in, err := c.Inspect(ctx, name)
	if err != nil {
		t.Fatalf("Inspect(%q) = %v", name, err)
	}
	host, _ := os.Hostname()
	if len(in.Holders) != 1 || len(in.Waiters) != 0 || len(in.Other) != 0 {
		t.Fatalf("Inspect(%q) = %+v, want one holder", name, in)
	}
	h := in.Holders[0]
	if h.Host != host || h.PID != os.Getpid() || h.Program != filepath.Base(os.Args[0]) || h.Labels["team"] != "locks" {
		t.Errorf("holder's process = %+v, want host %q, pid %d, program %q, label team=locks", h.Process, host, os.Getpid(), filepath.Base(os.Args[0]))
	}
	if in.Engine != "etcd" || h.Mode != "mutex" || h.Token != l2.Token() || h.Left <= 0 || h.Dead {
		t.Errorf("holder = %+v, want a live mutex holder with token %d and time left", h, l2.Token())
	}

	// The record is the key's value, where etcdctl lock and
	// concurrency.Mutex, which read keys only, never look (TestLayout).
	resp, err := rawClient(t, "").Get(ctx, keyOf(l2))
	if err != nil || len(resp.Kvs) != 1 || !strings.Contains(string(resp.Kvs[0].Value), "pid="+strconv.Itoa(os.Getpid())) {
		t.Errorf("Get(%q) = %v, %v; want the holder record as the value", keyOf(l2), resp, err)
	}

	release(t, l2)
	in, err = c.Inspect(ctx, name)
	if err != nil || len(in.Holders)+len(in.Waiters)+len(in.Other) != 0 {
		t.Errorf("Inspect(%q) after release = %+v, %v; want empty", name, in, err)
	}
	if raw, ok := baton.As[*etcdlock.Client](c); !ok || raw.GrantedTTL() != 2*time.Second {
		t.Errorf("baton.As[*etcdlock.Client] = %v, %v; want the client, granted 2s", raw, ok)
	}
}

// TestOpenSemaphoreInspect: a semaphore's permits carry the record after
// their N, and Inspect reads both.
func TestOpenSemaphoreInspect(t *testing.T) {
	name := uniq(t)
	c := open(t, "etcd://"+server.Endpoint)
	s, err := c.Semaphore(name, 2)
	if err != nil {
		t.Fatalf("Semaphore(%q) = %v", name, err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	p, err := s.Acquire(ctx)
	if err != nil {
		t.Fatalf("Acquire = %v", err)
	}
	defer release(t, p)
	in, err := c.Inspect(ctx, name)
	if err != nil || len(in.Holders) != 1 || in.Permits != 2 {
		t.Fatalf("Inspect(%q) = %+v, %v; want one permit holder of N=2", name, in, err)
	}
	if h := in.Holders[0]; h.Mode != "permit" || h.PID != os.Getpid() {
		t.Errorf("permit holder = %+v, want this process's permit", h)
	}
}

// TestOpenClose: Close of a client from baton.Open closes the etcd client
// it made.
func TestOpenClose(t *testing.T) {
	c := open(t, "etcd://"+server.Endpoint)
	raw, _ := baton.As[*etcdlock.Client](c)
	if err := c.Close(); err != nil {
		t.Fatalf("Close() = %v", err)
	}
	if raw.Etcd().Ctx().Err() == nil {
		t.Error("the etcd client is still open after Close, want it closed")
	}
}

// TestOpenUnavailable: nothing listening is baton.ErrUnavailable, within
// the connect timeout.
func TestOpenUnavailable(t *testing.T) {
	start := time.Now()
	_, err := baton.Open(t.Context(), "etcd://127.0.0.1:1", baton.WithConnectTimeout(500*time.Millisecond))
	if !errors.Is(err, baton.ErrUnavailable) || errors.Is(err, baton.ErrAuth) {
		t.Errorf("Open(nothing listening) = %v, want %v", err, baton.ErrUnavailable)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Open(nothing listening) took %v, want about the connect timeout", d)
	}
}

// TestOpenTLS: etcds:// with the CLI's variables (through WithGetenv)
// logs in with the user of the environment or of the URL, also as a user
// whose role has no rights on the probe's key; a wrong password, an
// unknown CA and a missing or foreign client certificate are
// baton.ErrAuth and never show the password.
func TestOpenTLS(t *testing.T) {
	addr := testenv.Require(t, "BATON_TEST_ETCD_TLS", "etcd with TLS and auth")
	dir := testenv.Require(t, "BATON_TEST_TLS_DIR", "TLS test certificates")
	password := func(user string) string {
		b, err := os.ReadFile(filepath.Join(dir, "etcd-"+user+".pass"))
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(b))
	}
	pass := password("baton")
	env := func(ca, cert, user, password string) baton.Option {
		vars := map[string]string{"BATON_ETCD_USER": user, "BATON_ETCD_PASSWORD": password}
		if ca != "" {
			vars["BATON_ETCD_CACERT"] = filepath.Join(dir, ca+".pem")
		}
		if cert != "" {
			vars["BATON_ETCD_CERT"], vars["BATON_ETCD_KEY"] = filepath.Join(dir, cert+".pem"), filepath.Join(dir, cert+".key")
		}
		return baton.WithGetenv(func(k string) string { return vars[k] })
	}
	name := "baton/tls/" + runID + "/" + t.Name()
	for _, url := range []string{"etcds://" + addr, "etcds://baton:" + pass + "@" + addr} {
		c := open(t, url, env("ca", "client", "baton", pass))
		m, err := c.Mutex(name)
		if err != nil {
			t.Fatal(err)
		}
		release(t, lock(t, m, name))
	}
	// outsider's role has rights on other/ only: the connect stands (etcd
	// checks rights after the quorum read), the acquire is refused.
	c := open(t, "etcds://"+addr, env("ca", "client", "outsider", password("outsider")))
	m, err := c.Mutex(name)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if _, err := m.Lock(ctx); err == nil || !strings.Contains(err.Error(), "permission denied") {
		t.Errorf("Lock by a role without the prefix = %v, want permission denied", err)
	}
	for _, tc := range []struct {
		what string
		opt  baton.Option
	}{
		{"wrong password", env("ca", "client", "baton", "wrong-"+pass)},
		{"unknown CA", env("rogue-ca", "client", "baton", pass)},
		{"no client certificate", env("ca", "", "baton", pass)},
		{"client certificate of another CA", env("ca", "rogue-client", "baton", pass)},
	} {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		_, err := baton.Open(ctx, "etcds://"+addr, tc.opt, baton.WithConnectTimeout(5*time.Second))
		cancel()
		if !errors.Is(err, baton.ErrAuth) || strings.Contains(err.Error(), pass) {
			t.Errorf("%s: Open = %v, want %v without the password", tc.what, err, baton.ErrAuth)
		}
	}
}

// TestCheckURL: bad etcd URLs fail offline with baton.ErrInvalidOption.
func TestCheckURL(t *testing.T) {
	for _, url := range []string{"etcd://", "etcd://h1:2379,", "etcd://h:99999", "etcd://h1:2379/prefix",
		"etcds://h1:2379?x=1", "etcd://::1"} {
		if err := baton.CheckURL(url); !errors.Is(err, baton.ErrInvalidOption) {
			t.Errorf("CheckURL(%q) = %v, want %v", url, err, baton.ErrInvalidOption)
		}
	}
	for _, url := range []string{"etcd://h1:2379,h2", "etcds://u:p@w@h1/", "ETCD://[::1]:2379"} {
		if err := baton.CheckURL(url); err != nil {
			t.Errorf("CheckURL(%q) = %v, want nil", url, err)
		}
	}
}
