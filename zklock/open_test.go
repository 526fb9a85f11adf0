package zklock_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/batontest/testenv"
	"github.com/baton-go/baton/zklock"
)

// openURL opens url with baton.Open, closed at the end of the test.
func openURL(t *testing.T, url string, opts ...baton.Option) *baton.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
	defer cancel()
	c, err := baton.Open(ctx, url, append([]baton.Option{baton.WithTTL(2 * time.Second)}, opts...)...)
	if err != nil {
		t.Fatalf("baton.Open(%q) = %v", url, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func inspectName(t *testing.T, c *baton.Client, name string) baton.Inspection {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	in, err := c.Inspect(ctx, name)
	if err != nil {
		t.Fatalf("Inspect(%q) = %v", name, err)
	}
	return in
}

// TestOpen: baton.Open("zk://…/chroot") gives a client whose mutex grants
// increasing tokens, and whose every entry carries the holder record:
// Inspect shows this host and pid, the program and the labels, on the
// holder and on a waiter of another client, and nothing once both left.
func TestOpen(t *testing.T) {
	url := "zk://" + testenv.ZK(t) + "/baton-test-open"
	c := openURL(t, url, baton.WithProgram("open-test"), baton.WithLabel("team", "pay&ops"))
	if c.Engine() != "zk" {
		t.Errorf("Engine() = %q, want zk", c.Engine())
	}
	if zc, ok := baton.As[*zklock.Client](c); !ok || zc.SessionTimeout() != 2*time.Second {
		t.Errorf("As[*zklock.Client] = %v, %v; want the client with the 2s session timeout asked for", zc, ok)
	}
	name := lockName(t)
	m, err := c.Mutex(name)
	if err != nil {
		t.Fatalf("Mutex(%q) = %v", name, err)
	}
	first, err := try(t, m.Lock)
	if err != nil {
		t.Fatalf("Lock = %v", err)
	}
	release(t, first)
	l, err := try(t, m.Lock)
	if err != nil {
		t.Fatalf("second Lock = %v", err)
	}
	if l.Token() <= first.Token() {
		t.Errorf("second grant's token %d, want > %d", l.Token(), first.Token())
	}

	other := openURL(t, url, baton.WithProgram("waiter"))
	om, err := other.Mutex(name)
	if err != nil {
		t.Fatalf("Mutex(%q) = %v", name, err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	waited := make(chan error, 1)
	go func() {
		_, err := om.Lock(ctx)
		waited <- err
	}()
	var in baton.Inspection
	eventually(t, 5*time.Second, "a waiter queued", func() bool {
		in = inspectName(t, c, name)
		return len(in.Waiters) == 1
	})
	cancel()
	if err := <-waited; err == nil {
		t.Error("the waiter's Lock returned nil after its context ended")
	}

	host, _ := os.Hostname()
	if in.Engine != "zk" || in.Name != name || len(in.Holders) != 1 {
		t.Fatalf("Inspect = %+v, want one holder of %q on zk", in, name)
	}
	h, w := in.Holders[0], in.Waiters[0]
	if h.Host != host || h.PID != os.Getpid() || h.Program != "open-test" || h.Labels["team"] != "pay&ops" {
		t.Errorf("holder's record = %+v, want host %q, pid %d, program open-test, team pay&ops", h.Process, host, os.Getpid())
	}
	if h.Mode != "mutex" || h.Owner == "" || h.Age <= 0 || h.Dead {
		t.Errorf("holder = %+v, want a live mutex entry with its name and age", h)
	}
	if w.Host != host || w.PID != os.Getpid() || w.Program != "waiter" {
		t.Errorf("waiter's record = %+v, want host %q, pid %d, program waiter", w.Process, host, os.Getpid())
	}

	release(t, l)
	eventually(t, 5*time.Second, "the lock empty", func() bool {
		in = inspectName(t, c, name)
		return len(in.Holders)+len(in.Waiters)+len(in.Other) == 0
	})
}

// TestOpenSemaphoreInspect: a semaphore's leases carry their N and the
// holder record; Inspect shows the permit holders with their records and
// N, and an acquirer queued on the guard as a waiter after them.
func TestOpenSemaphoreInspect(t *testing.T) {
	url := "zk://" + testenv.ZK(t)
	c := openURL(t, url, baton.WithProgram("sem-test"))
	name := lockName(t)
	s, err := c.Semaphore(name, 1)
	if err != nil {
		t.Fatalf("Semaphore(%q, 1) = %v", name, err)
	}
	l, err := try(t, s.Acquire)
	if err != nil {
		t.Fatalf("Acquire = %v", err)
	}
	defer release(t, l)
	ctx, cancel := context.WithCancel(t.Context())
	waited := make(chan error, 1)
	go func() {
		_, err := s.Acquire(ctx)
		waited <- err
	}()
	var in baton.Inspection
	eventually(t, 5*time.Second, "an acquirer queued", func() bool {
		in = inspectName(t, c, name)
		return len(in.Waiters) == 2 // its lease, its guard entry
	})
	cancel()
	<-waited

	host, _ := os.Hostname()
	if in.Permits != 1 || len(in.Holders) != 1 {
		t.Fatalf("Inspect = %+v, want one holder of a semaphore of 1", in)
	}
	h := in.Holders[0]
	if h.Mode != "permit" || h.Owner != leaseRel(t, c, name, l) || h.Host != host || h.PID != os.Getpid() || h.Program != "sem-test" {
		t.Errorf("holder = %+v, want the permit %s held by host %q pid %d sem-test", h, l.Owner(), host, os.Getpid())
	}
	if w := in.Waiters; w[0].Mode != "permit" || !strings.HasPrefix(w[1].Owner, "locks/") || w[1].Host != host {
		t.Errorf("waiters = %+v, want the acquirer's lease, then its guard entry with its record", w)
	}
}

// leaseRel names l's entry relative to the semaphore's directory, as
// Inspect does.
func leaseRel(t *testing.T, c *baton.Client, name string, l *baton.Lease) string {
	t.Helper()
	zc, _ := baton.As[*zklock.Client](c)
	dir, err := zc.Dir(name)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimPrefix(l.Owner(), dir+"/")
}

// TestOpenTLS: zk+tls:// verifies the server by the name in the URL with
// BATON_ZK_CACERT, presents BATON_ZK_CERT/_KEY, and authenticates with
// the digest user from the environment or from the URL; without the CA
// file it fails as a bad option, before connecting.
func TestOpenTLS(t *testing.T) {
	ensureChroot(t, rawTLS(t))
	addr, pass := tlsServer(t, "localhost")
	dir := testenv.Require(t, "BATON_TEST_TLS_DIR", "TLS test certificates")
	env := map[string]string{
		"BATON_ZK_CACERT": filepath.Join(dir, "ca.pem"),
		"BATON_ZK_CERT":   filepath.Join(dir, "client.pem"),
		"BATON_ZK_KEY":    filepath.Join(dir, "client.key"),
	}
	getenv := func(k string) string { return env[k] }
	url := "zk+tls://" + addr + tlsChroot
	for _, tc := range []struct {
		name, url string
		user      bool
	}{
		{"user from the environment", url, true},
		{"user in the URL", "zk+tls://baton:" + pass + "@" + addr + tlsChroot, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env["BATON_ZK_USER"], env["BATON_ZK_PASSWORD"] = "", ""
			if tc.user {
				env["BATON_ZK_USER"], env["BATON_ZK_PASSWORD"] = "baton", pass
			}
			c := openURL(t, tc.url, baton.WithGetenv(getenv))
			m, err := c.Mutex(lockName(t))
			if err != nil {
				t.Fatal(err)
			}
			l, err := try(t, m.Lock)
			if err != nil {
				t.Fatalf("Lock = %v", err)
			}
			release(t, l)
		})
	}

	env["BATON_ZK_CACERT"] = filepath.Join(dir, "missing.pem")
	_, err := baton.Open(t.Context(), url, baton.WithGetenv(getenv))
	if !errors.Is(err, baton.ErrInvalidOption) || !strings.Contains(err.Error(), "BATON_ZK_CACERT") {
		t.Errorf("Open with a missing CA file = %v, want ErrInvalidOption naming BATON_ZK_CACERT", err)
	}
}

// TestCheckURL: the URL forms the CLI takes pass offline, and each bad
// one fails with ErrInvalidOption and the CLI's message, never showing
// the password.
func TestCheckURL(t *testing.T) {
	for _, good := range []string{
		"zk://h1:2181,h2,[::1]:2182/app", "ZK://h1", "zk+tls://h1:2281/a/b", "zk://bob:s3cr%2Ft@h1/c", "zk://bob@h1",
	} {
		if err := baton.CheckURL(good); err != nil {
			t.Errorf("CheckURL(%q) = %v", good, err)
		}
	}
	for _, tc := range []struct{ url, msg string }{
		{"zk://", `backend zk://: zklock: URL "zk://": no server`},
		{"zk:///app", `no server`},
		{"zk://:s3cret@h1/c", "backend zk://:***@h1/c: empty ZooKeeper user"},
		{"zk://bob:s3cret@h1/c?x=1", `backend zk://bob:***@h1/c?x=1: zklock: URL "zk://h1/c?x=1": query and fragment are not supported`},
		{"zk://h1,,h2", "empty server address"},
		{"zk://h1:99999", `backend zk://h1:99999: host "h1": port "99999", want 1 to 65535`},
		{"zk+tls://h1/a/../b", "invalid"},
		{"zk://h1/zookeeper/quota", "ZooKeeper's own /zookeeper tree"},
	} {
		err := baton.CheckURL(tc.url)
		if !errors.Is(err, baton.ErrInvalidOption) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("CheckURL(%q) = %v, want ErrInvalidOption with %q", tc.url, err, tc.msg)
		}
		if err != nil && strings.Contains(err.Error(), "s3cret") {
			t.Errorf("CheckURL(%q) = %v shows the password", tc.url, err)
		}
	}
}
