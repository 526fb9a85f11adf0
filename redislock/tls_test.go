package redislock_test

import (
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
	"github.com/baton-go/baton/engine"
	"github.com/baton-go/baton/redislock"
	"github.com/redis/go-redis/v9"
)

// tlsOptions returns go-redis options for the TLS deployment: the test
// CA, the client certificate pair cert (its .pem and .key; "" for none)
// and user's password from the deployment's directory.
func tlsOptions(t *testing.T, cert, user string) *redis.Options {
	t.Helper()
	addr := testenv.Require(t, "BATON_TEST_REDIS_TLS", "Redis with TLS and ACL users")
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
	tc := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	if cert != "" {
		pair, err := tls.X509KeyPair(read(cert+".pem"), read(cert+".key"))
		if err != nil {
			t.Fatal(err)
		}
		tc.Certificates = []tls.Certificate{pair}
	}
	return &redis.Options{Addr: addr, TLSConfig: tc, Username: user,
		Password: strings.TrimSpace(string(read("redis-" + user + ".pass"))), MaxRetries: -1}
}

// TestTLSACL: over TLS with a client certificate, a user whose ACL holds
// only baton's keys, channels and the engine's commands locks, is woken by
// the grant's publish when waiting, and releases; a user whose ACL holds
// other keys connects, and is refused by the acquire itself: the error
// carries the server's NOPERM.
func TestTLSACL(t *testing.T) {
	name := "tls/" + engine.NewOwnerID()[:12]
	a := newClient(t, redisClientWith(t, tlsOptions(t, "client", "baton")), redislock.Options{})
	b := newClient(t, redisClientWith(t, tlsOptions(t, "client", "baton")), redislock.Options{})
	l := lock(t, a, name)
	mb, err := b.Mutex(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mb.TryLock(opCtx(t, 5*time.Second)); !errors.Is(err, baton.ErrNotAcquired) {
		t.Fatalf("TryLock while held = %v, want ErrNotAcquired", err)
	}
	got := make(chan error, 1)
	go func() {
		lb, err := mb.Lock(opCtx(t, 10*time.Second))
		if err == nil {
			if lb.Token() <= l.Token() {
				err = errors.New("the waiter's token is not above the first holder's")
			}
			_ = lb.Release(opCtx(t, 5*time.Second))
		}
		got <- err
	}()
	time.Sleep(200 * time.Millisecond) // let the waiter subscribe
	if err := l.Release(opCtx(t, 5*time.Second)); err != nil {
		t.Fatalf("Release() = %v", err)
	}
	if err := <-got; err != nil {
		t.Fatalf("waiter: %v", err)
	}

	o := newClient(t, redisClientWith(t, tlsOptions(t, "client", "outsider")), redislock.Options{})
	mo, err := o.Mutex(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mo.Lock(opCtx(t, 5*time.Second)); err == nil || !strings.Contains(err.Error(), "NOPERM") {
		t.Errorf("Lock by a user without baton's keys = %v, want NOPERM", err)
	}
}

// TestTLSClientCertRequired: the server refuses a client without a
// certificate, and one whose certificate another CA signed.
func TestTLSClientCertRequired(t *testing.T) {
	for _, cert := range []string{"", "rogue-client"} {
		rdb := redis.NewClient(tlsOptions(t, cert, "baton"))
		err := rdb.Ping(opCtx(t, 5*time.Second)).Err()
		_ = rdb.Close()
		if err == nil || !strings.Contains(err.Error(), "tls: ") {
			t.Errorf("PING with client certificate %q = %v, want a TLS refusal", cert, err)
		}
	}
}
