package redlock_test

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/batontest/testenv"
	"github.com/baton-go/baton/engine"
	"github.com/baton-go/baton/redlock"
	"github.com/baton-go/baton/redlock/redlocktest"
)

// openURL returns the redlock:// URL of the five test nodes under a key
// prefix of the test's own, deleted at the end of the test.
func openURL(t *testing.T) (url string, addrs []string, prefix string) {
	t.Helper()
	addrs = testenv.Redlock(t)
	prefix = redlocktest.Prefix(t, addrs)
	return "redlock://" + strings.Join(addrs, ",") + "?prefix=" + prefix, addrs, prefix
}

// open opens url with the tests' TTL, closed at the end of the test.
func open(t *testing.T, url string, opts ...baton.Option) *baton.Client {
	t.Helper()
	c, err := baton.Open(redlocktest.OpCtx(t, 10*time.Second), url, append([]baton.Option{baton.WithTTL(redlocktest.TTL)}, opts...)...)
	if err != nil {
		t.Fatalf("baton.Open(%s) = %v", url, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// inspect reads name through c or stops the test.
func inspect(t *testing.T, c *baton.Client, name string) baton.Inspection {
	t.Helper()
	in, err := c.Inspect(redlocktest.OpCtx(t, 5*time.Second), name)
	if err != nil {
		t.Fatalf("Inspect(%q) = %v", name, err)
	}
	return in
}

// TestOpen: baton.Open on a redlock:// URL gives a mutex whose grant
// records this process on the nodes it holds, kept by the extensions and
// gone with the release; Inspect shows the majority's holder with its
// quorum token and the waiter; a second grant's token is greater; the
// other recipes are refused with baton.ErrInvalidOption.
func TestOpen(t *testing.T) {
	t.Parallel()
	url, _, _ := openURL(t)
	c := open(t, url, baton.WithProgram("opentest"), baton.WithLabel("team", "pay"))
	if c.Engine() != "redlock" {
		t.Errorf("Engine() = %q, want redlock", c.Engine())
	}
	name := "open/" + engine.NewOwnerID()[:12]
	m, err := c.Mutex(name)
	if err != nil {
		t.Fatal(err)
	}
	l1, err := m.Lock(redlocktest.OpCtx(t, 10*time.Second))
	if err != nil {
		t.Fatalf("Lock = %v", err)
	}
	time.Sleep(2 * redlocktest.TTL) // extended, record included

	host, _ := os.Hostname()
	in := inspect(t, c, name)
	if len(in.Holders) != 1 {
		t.Fatalf("Inspect = %+v, want one holder", in)
	}
	h := in.Holders[0]
	if h.Mode != "mutex" || h.Token != l1.Token() || h.Owner != l1.Owner() || h.Left <= 0 || h.Left > redlocktest.TTL {
		t.Errorf("holder = %+v, want owner %s, token %d, 0 < Left ≤ %v", h, l1.Owner(), l1.Token(), redlocktest.TTL)
	}
	if h.Host != host || h.PID != os.Getpid() || h.Program != "opentest" || h.Labels["team"] != "pay" {
		t.Errorf("holder record = %+v, want host %q, pid %d, program opentest, label team=pay", h.Process, host, os.Getpid())
	}
	if _, ok := baton.As[*redlock.Client](c); !ok {
		t.Fatal("baton.As[*redlock.Client] = false")
	}
	es, err := redlock.Inspect(redlocktest.OpCtx(t, 5*time.Second), c, name)
	if err != nil {
		t.Fatal(err)
	}
	recorded := 0
	for _, e := range es {
		if e.Owner == l1.Owner() && e.Process.PID == os.Getpid() {
			recorded++
		}
	}
	if recorded < redlock.Majority(c) {
		t.Errorf("%d nodes hold the grant with its record, want ≥ %d: %+v", recorded, redlock.Majority(c), es)
	}

	waited := make(chan error, 1)
	go func() {
		l, err := m.Lock(redlocktest.OpCtx(t, 20*time.Second)) // a fresh context: not a reentry
		if err == nil {
			if l.Token() <= l1.Token() {
				err = errors.New("the second grant's token is not above the first's")
			}
			err = errors.Join(err, l.Release(redlocktest.OpCtx(t, 5*time.Second)))
		}
		waited <- err
	}()
	deadline := time.Now().Add(10 * time.Second)
	for in = inspect(t, c, name); len(in.Waiters) == 0; in = inspect(t, c, name) {
		if time.Now().After(deadline) {
			t.Fatalf("Inspect = %+v, want the waiter listed", in)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if w := in.Waiters[0]; w.Mode != "mutex" || w.Owner == "" || w.Left <= 0 || w.Note == "" {
		t.Errorf("waiter = %+v, want a mutex waiter with its id, time left and a note", w)
	}
	if err := l1.Release(redlocktest.OpCtx(t, 5*time.Second)); err != nil {
		t.Fatalf("Release = %v", err)
	}
	if err := <-waited; err != nil {
		t.Fatalf("second Lock: %v", err)
	}
	deadline = time.Now().Add(5 * time.Second)
	for in = inspect(t, c, name); len(in.Holders)+len(in.Other)+len(in.Waiters) > 0; in = inspect(t, c, name) {
		if time.Now().After(deadline) {
			t.Fatalf("Inspect after the releases = %+v, want nothing", in)
		}
		time.Sleep(20 * time.Millisecond)
	}

	if _, err := c.RWMutex(name); !errors.Is(err, baton.ErrInvalidOption) {
		t.Errorf("RWMutex = %v, want baton.ErrInvalidOption", err)
	}
	if _, err := c.Semaphore(name, 2); !errors.Is(err, baton.ErrInvalidOption) {
		t.Errorf("Semaphore = %v, want baton.ErrInvalidOption", err)
	}
	if _, err := c.Election(name); !errors.Is(err, baton.ErrInvalidOption) {
		t.Errorf("Election = %v, want baton.ErrInvalidOption", err)
	}
}

// TestOpenWritesNothing: Open and Inspect write nothing on the nodes (a
// read-only client, baton inspect, may use them); the first acquire sets
// the nodes' indexes; a client listing the nodes in another order is then
// refused at Open with ErrNodeIndex and baton.ErrInvalidOption.
func TestOpenWritesNothing(t *testing.T) {
	t.Parallel()
	url, addrs, prefix := openURL(t)
	c := open(t, url)
	inspect(t, c, "open/nothing")
	keys := func() int {
		n := 0
		for _, a := range addrs {
			rdb := redis.NewClient(&redis.Options{Addr: a})
			ks, err := rdb.Keys(redlocktest.OpCtx(t, 5*time.Second), prefix+"*").Result()
			_ = rdb.Close()
			if err != nil {
				t.Fatal(err)
			}
			n += len(ks)
		}
		return n
	}
	if n := keys(); n != 0 {
		t.Fatalf("%d keys under %s after Open and Inspect, want none", n, prefix)
	}
	m, err := c.Mutex("open/nothing")
	if err != nil {
		t.Fatal(err)
	}
	l, err := m.Lock(redlocktest.OpCtx(t, 10*time.Second))
	if err != nil {
		t.Fatalf("Lock = %v", err)
	}
	redlocktest.Release(t, l)
	if n := keys(); n < len(addrs) {
		t.Errorf("%d keys under %s after a lock, want the %d nodes' indexes at least", n, prefix, len(addrs))
	}

	swapped := append([]string{addrs[1], addrs[0]}, addrs[2:]...)
	_, err = baton.Open(redlocktest.OpCtx(t, 10*time.Second), "redlock://"+strings.Join(swapped, ",")+"?prefix="+prefix)
	if !errors.Is(err, redlock.ErrNodeIndex) || !errors.Is(err, baton.ErrInvalidOption) {
		t.Errorf("Open with the nodes in another order = %v, want ErrNodeIndex and baton.ErrInvalidOption", err)
	}
}

// TestOpenUnreachable: nodes that refuse connections, and nodes that
// accept them but never answer, fail Open with baton.ErrUnavailable at
// the connect timeout.
func TestOpenUnreachable(t *testing.T) {
	t.Parallel()
	var silent []string
	for range 3 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		silent = append(silent, ln.Addr().String())
	}
	for _, url := range []string{"redlock://127.0.0.1:1,127.0.0.1:2,127.0.0.1:3", "redlock://" + strings.Join(silent, ",")} {
		start := time.Now()
		_, err := baton.Open(context.Background(), url, baton.WithConnectTimeout(300*time.Millisecond))
		if !errors.Is(err, baton.ErrUnavailable) || time.Since(start) > 2*time.Second {
			t.Errorf("Open(%s) = %v after %v, want baton.ErrUnavailable within 2s", url, err, time.Since(start))
		}
	}
}

// TestCheckURL: baton.CheckURL refuses, offline and with
// baton.ErrInvalidOption, the redlock:// URLs the CLI refuses, and never
// shows a password.
func TestCheckURL(t *testing.T) {
	t.Parallel()
	missing := func(k string) string {
		if k == "BATON_REDIS_CACERT" {
			return filepath.Join(t.TempDir(), "missing.pem")
		}
		return ""
	}
	three := "127.0.0.1:1,127.0.0.1:2,127.0.0.1:3"
	for _, tc := range []struct {
		url, want string
		opts      []baton.Option
	}{
		{"redlock://:Pw9xSecret@127.0.0.1:1,127.0.0.1:2", "at least 3", nil},
		{"redlock://127.0.0.1:1,127.0.0.1:2,127.0.0.1:1", "listed twice", nil},
		{"redlock://h1,h2,h3", "want host:port", nil},
		{"redlock://:Pw9xSecret@" + three + "?bogus=1", `unknown parameter "bogus"`, nil},
		{"redlock://" + three + "/zero", `database "zero"`, nil},
		{"redlock://" + three + "?tls=maybe", `tls="maybe"`, nil},
		{"redlock://" + three + "?prefix=", "empty prefix", nil},
		{"redlock://" + three + "?tls=true", "BATON_REDIS_CACERT", []baton.Option{baton.WithGetenv(missing)}},
		{"redlock://" + three, "TTL", []baton.Option{baton.WithTTL(100 * time.Millisecond)}},
	} {
		err := baton.CheckURL(tc.url, tc.opts...)
		if !errors.Is(err, baton.ErrInvalidOption) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "Pw9xSecret") {
			t.Errorf("CheckURL(%s) = %v, want baton.ErrInvalidOption naming %s, without the password", tc.url, err, tc.want)
		}
	}
	for _, url := range []string{"redlock://" + three, "redlock://u:p@" + three + "/2?tls=false&prefix=x:"} {
		if err := baton.CheckURL(url); err != nil {
			t.Errorf("CheckURL(%s) = %v, want nil", url, err)
		}
	}
}
