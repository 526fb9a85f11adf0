package etcdlock_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/batontest/testenv"
	"github.com/baton-go/baton/etcdlock"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// tlsEtcd returns a client of the TLS deployment (https, client
// certificates required, user/password auth) as user, with the test CA
// and client certificate, closed at the end of the test.
func tlsEtcd(t *testing.T, user string) *clientv3.Client {
	t.Helper()
	addr := testenv.Require(t, "BATON_TEST_ETCD_TLS", "etcd with TLS and auth")
	dir := testenv.Require(t, "BATON_TEST_TLS_DIR", "TLS test certificates")
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(read("ca.pem")) {
		t.Fatal("ca.pem holds no certificate")
	}
	pair, err := tls.X509KeyPair(read("client.pem"), read("client.key"))
	if err != nil {
		t.Fatal(err)
	}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   []string{addr},
		DialTimeout: 5 * time.Second,
		TLS:         &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12},
		Username:    user,
		Password:    strings.TrimSpace(string(read("etcd-" + user + ".pass"))),
		Logger:      zap.NewNop(),
	})
	if err != nil {
		t.Fatalf("clientv3.New(%s as %s) = %v", addr, user, err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// TestTLSAuth: over TLS with a client certificate, user baton (its role
// reads and writes the prefix baton/) locks, is excluded by a second
// client, and unlocks; user reader (read only on baton/) is refused by
// the acquire with etcd's permission denied, and leaves no key behind.
func TestTLSAuth(t *testing.T) {
	name := "baton/tls/" + runID + "/" + t.Name()
	a, err := etcdlock.NewClient(tlsEtcd(t, "baton"), etcdlock.Options{TTL: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close() })
	m := mutex(t, a, name)
	l := lock(t, m, name)
	if l.Token() == 0 {
		t.Error("Token() = 0, want a create revision")
	}
	b, err := etcdlock.NewClient(tlsEtcd(t, "baton"), etcdlock.Options{TTL: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if _, err := mutex(t, b, name).TryLock(ctx); !errors.Is(err, baton.ErrNotAcquired) {
		t.Errorf("TryLock while held = %v, want ErrNotAcquired", err)
	}
	release(t, l)

	r, err := etcdlock.NewClient(tlsEtcd(t, "reader"), etcdlock.Options{TTL: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	if _, err := mutex(t, r, name).Lock(ctx); err == nil || !strings.Contains(err.Error(), "permission denied") {
		t.Errorf("Lock by a read-only user = %v, want permission denied", err)
	}
	if keys := entries(t, a, name); len(keys) != 0 {
		t.Errorf("Entries(%q) after the refused lock = %q, want none", name, keys)
	}
}
