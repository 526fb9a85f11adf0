package zklock_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/batontest/testenv"
	"github.com/baton-go/baton/zklock"
	"github.com/go-zookeeper/zk"
)

// tlsChroot is the persistent node of the TLS tests: its ACL names user
// baton's digest alone, as an administrator sets up a chroot, so that
// another identity can create nothing under it.
const tlsChroot = "/baton-tls"

// tlsServer returns the TLS ZooKeeper's address (secure port only,
// client certificates required) with host as its host, and baton's
// digest password.
func tlsServer(t *testing.T, host string) (addr, pass string) {
	t.Helper()
	_, port, err := net.SplitHostPort(testenv.Require(t, "BATON_TEST_ZK_TLS", "ZooKeeper with TLS"))
	if err != nil {
		t.Fatal(err)
	}
	return net.JoinHostPort(host, port), strings.TrimSpace(string(tlsRead(t, "zk-baton.pass")))
}

func tlsRead(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testenv.Require(t, "BATON_TEST_TLS_DIR", "TLS test certificates"), name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// tlsConfig trusts ca (a .pem of the test directory) and presents the
// client pair (its .pem and .key; "" for none).
func tlsConfig(t *testing.T, ca, pair string) *tls.Config {
	t.Helper()
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(tlsRead(t, ca+".pem")) {
		t.Fatalf("%s.pem holds no certificate", ca)
	}
	tc := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	if pair != "" {
		kp, err := tls.X509KeyPair(tlsRead(t, pair+".pem"), tlsRead(t, pair+".key"))
		if err != nil {
			t.Fatal(err)
		}
		tc.Certificates = []tls.Certificate{kp}
	}
	return tc
}

// rawTLS returns a go-zookeeper connection over TLS authenticated as
// user baton, for the test's own checks.
func rawTLS(t *testing.T) *zk.Conn {
	t.Helper()
	addr, pass := tlsServer(t, "127.0.0.1")
	tc := tlsConfig(t, "ca", "client")
	dialer := func(network, address string, timeout time.Duration) (net.Conn, error) {
		return tls.DialWithDialer(&net.Dialer{Timeout: timeout}, network, address, tc)
	}
	conn, _, err := zk.Connect([]string{addr}, 5*time.Second, zk.WithDialer(dialer), zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	if err := conn.AddAuth("digest", []byte("baton:"+pass)); err != nil {
		t.Fatalf("AddAuth = %v", err)
	}
	return conn
}

// ensureChroot creates tlsChroot with baton's digest ACL if it is missing.
func ensureChroot(t *testing.T, conn *zk.Conn) {
	t.Helper()
	_, pass := tlsServer(t, "127.0.0.1")
	_, err := conn.Create(tlsChroot, nil, 0, zk.DigestACL(zk.PermAll, "baton", pass))
	if err != nil && !errors.Is(err, zk.ErrNodeExists) {
		t.Fatalf("create %s = %v", tlsChroot, err)
	}
}

// TestTLSDigestACL: over TLS with a client certificate, verifying the
// server by the name "localhost" (a DNS SAN: the server list is not
// resolved to addresses first), user baton locks and unlocks under a
// chroot only it may write; the lock's directory and entry carry baton's
// digest ACL and nothing else. A wrong password, and another user, are
// refused (baton.ErrAuth).
func TestTLSDigestACL(t *testing.T) {
	raw := rawTLS(t)
	ensureChroot(t, raw)
	addr, pass := tlsServer(t, "localhost")
	c := dial(t, addr, zklock.Options{TLS: tlsConfig(t, "ca", "client"), Chroot: tlsChroot,
		Auth: []zklock.Digest{{User: "baton", Password: pass}}})
	name := lockName(t)
	l := lock(t, mutex(t, c, name))
	dir := tlsChroot + "/" + name
	kids, _, err := raw.Children(dir)
	if err != nil || len(kids) != 1 {
		t.Fatalf("Children(%s) = %v, %v; want the one entry", dir, kids, err)
	}
	want := zk.DigestACL(zk.PermAll, "baton", pass)
	for _, p := range []string{dir, dir + "/" + kids[0], tlsChroot + "/baton-test"} {
		acl, _, err := raw.GetACL(p)
		if err != nil || len(acl) != 1 || acl[0] != want[0] {
			t.Errorf("GetACL(%s) = %v, %v; want %v alone", p, acl, err, want)
		}
	}
	if err := l.Release(context.Background()); err != nil {
		t.Errorf("Release() = %v", err)
	}

	for _, who := range []zklock.Digest{{User: "baton", Password: "wrong-" + pass}, {User: "mallory", Password: pass}} {
		o := dial(t, addr, zklock.Options{TLS: tlsConfig(t, "ca", "client"), Chroot: tlsChroot, Auth: []zklock.Digest{who}})
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		_, err := mutex(t, o, lockName(t)).Lock(ctx)
		cancel()
		if !errors.Is(err, baton.ErrAuth) {
			t.Errorf("Lock as %s with another password = %v, want ErrAuth", who.User, err)
		}
	}
}

// waitBackgroundClose waits until no client a failed Dial left behind is
// still closing: Dial returns at once and closes its half-open client in
// the background, which go-zookeeper's Close can stretch to a second;
// the package's leak check must not see it.
func waitBackgroundClose(t *testing.T) {
	t.Helper()
	buf := make([]byte, 1<<20)
	deadline := time.Now().Add(5 * time.Second)
	for {
		n := runtime.Stack(buf, true)
		// A goroutine that has not started yet shows Dial's go wrapper.
		if !bytes.Contains(buf[:n], []byte("zklock.(*Client).Close")) && !bytes.Contains(buf[:n], []byte("zklock.Dial.gowrap")) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("a client of a failed Dial is still closing after 5s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestTLSRefused: a server certificate from an unknown CA, no client
// certificate, and a client certificate from another CA each fail Dial
// with baton.ErrAuth, well before its deadline: they are not retried.
func TestTLSRefused(t *testing.T) {
	addr, _ := tlsServer(t, "127.0.0.1")
	t.Cleanup(func() { waitBackgroundClose(t) })
	for _, tc := range []struct{ name, ca, pair, cause string }{
		{"unknown CA", "rogue-ca", "client", "unknown authority"},
		{"no client certificate", "ca", "", "remote error: tls"},
		{"client certificate from another CA", "ca", "rogue-client", "remote error: tls"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			start := time.Now()
			c, err := zklock.Dial(ctx, []string{addr}, zklock.Options{SessionTimeout: 2 * time.Second, TLS: tlsConfig(t, tc.ca, tc.pair)})
			if err == nil {
				c.Close()
				t.Fatal("Dial succeeded")
			}
			if !errors.Is(err, baton.ErrAuth) || !strings.Contains(err.Error(), tc.cause) {
				t.Errorf("Dial = %v, want ErrAuth naming %q", err, tc.cause)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("Dial took %v: the refusal was retried", d)
			}
		})
	}
}

// TestTLS13ClientCertRefusedOnRead: a TLS 1.3 server refuses a missing
// client certificate only after the client's handshake has completed, on
// the client's first read. Dial still fails promptly with baton.ErrAuth
// naming the cause, instead of reconnecting until its deadline. (The
// ZooKeeper deployment negotiates TLS 1.2, where the refusal ends the
// handshake itself; this listener stands for a TLS 1.3 server.)
func TestTLS13ClientCertRefusedOnRead(t *testing.T) {
	pair, err := tls.X509KeyPair(tlsRead(t, "server.pem"), tlsRead(t, "server.key"))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{pair},
		ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: tlsConfig(t, "ca", "").RootCAs, MinVersion: tls.VersionTLS13})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { // owned by the test: ends when ln closes
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { // ends with the handshake's refusal
				defer c.Close()
				_ = c.(*tls.Conn).Handshake()
			}()
		}
	}()
	t.Cleanup(func() { ln.Close(); <-done })
	t.Cleanup(func() { waitBackgroundClose(t) })
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	start := time.Now()
	c, err := zklock.Dial(ctx, []string{ln.Addr().String()}, zklock.Options{SessionTimeout: 2 * time.Second,
		TLS: tlsConfig(t, "ca", "")})
	if err == nil {
		c.Close()
		t.Fatal("Dial succeeded")
	}
	if !errors.Is(err, baton.ErrAuth) || !strings.Contains(err.Error(), "certificate required") {
		t.Errorf("Dial = %v, want ErrAuth naming the certificate required", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Dial took %v: the refusal was retried", d)
	}
}
