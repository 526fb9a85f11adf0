package main_test

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/baton-go/baton/batontest/testenv"
	"github.com/go-zookeeper/zk"
)

// The tests of this file run against the TLS and authentication
// deployments of scripts/servers.d/tls.sh: every server there refuses
// plain text and unauthenticated clients. Each refusal must exit 77, name
// its cause on stderr, and never print the password.

// tlsDir returns the directory of the test CA, certificates and passwords.
func tlsDir(t *testing.T) string {
	return testenv.Require(t, "BATON_TEST_TLS_DIR", "TLS test certificates")
}

// tlsFile returns the path of a file of tlsDir.
func tlsFile(t *testing.T, name string) string { return filepath.Join(tlsDir(t), name) }

// tlsPass returns the password of user on engine ("pg", "my", "redis",
// "etcd") of the TLS deployments.
func tlsPass(t *testing.T, engine, user string) string {
	t.Helper()
	b, err := os.ReadFile(tlsFile(t, engine+"-"+user+".pass"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// tlsCase is one `baton run` against a TLS deployment.
type tlsCase struct {
	name    string
	env     []string
	backend string
	want    int
	// cause is a phrase stderr must hold when want is not 0: the server's
	// or the TLS stack's reason, so that the user knows what to fix.
	cause string
}

// runTLSCases runs each case as `baton run` of a lock under prefix whose
// COMMAND checks BATON_ENGINE, and checks its exit code, its cause and
// that no secret of secrets reaches stdout or stderr.
func runTLSCases(t *testing.T, engine, prefix string, secrets []string, cases []tlsCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"run", "--backend", tc.backend, "--connect-timeout", "5s", prefix + lockName(t),
				"--", "sh", "-c", `[ "$BATON_ENGINE" = "$0" ]`, engine}
			r := runBaton(t, tc.env, args...)
			if r.code != tc.want {
				t.Errorf("exit = %d, want %d; stderr:\n%s", r.code, tc.want, r.stderr)
			}
			if tc.want != 0 && !strings.Contains(strings.ToLower(r.stderr), strings.ToLower(tc.cause)) {
				t.Errorf("stderr does not name the cause %q:\n%s", tc.cause, r.stderr)
			}
			for _, s := range secrets {
				if strings.Contains(r.stderr, s) || strings.Contains(r.stdout, s) {
					t.Errorf("output shows a password:\n%s%s", r.stdout, r.stderr)
				}
			}
		})
	}
}

// withQuery returns raw with its query parameters set to kv (k, v, …).
func withQuery(t *testing.T, raw string, kv ...string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	for i := 0; i < len(kv); i += 2 {
		q.Set(kv[i], kv[i+1])
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// withoutQuery returns raw without the query parameters keys.
func withoutQuery(t *testing.T, raw string, keys ...string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	for _, k := range keys {
		q.Del(k)
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// withUser returns raw with user and password (no password if "").
func withUser(t *testing.T, raw, user, pass string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(user, pass)
	if pass == "" {
		u.User = url.User(user)
	}
	return u.String()
}

// TestPostgresTLSAuth: PostgreSQL with hostssl scram-sha-256
// clientcert=verify-ca only. The server is verified (sslmode=verify-full,
// sslrootcert), the client presents sslcert/sslkey (Go's TLS sends no
// certificate the server's CA list does not name, so one from another CA
// is refused as missing); the password comes
// from the URL or BATON_SQL_PASSWORD. A wrong password, a server
// certificate from an unknown CA, no client certificate or one from
// another CA, no TLS, and a user without CREATE on the schema each exit
// 77 naming the cause.
func TestPostgresTLSAuth(t *testing.T) {
	t.Parallel()
	good := testenv.Require(t, "BATON_TEST_PG_TLS", "PostgreSQL with TLS and scram-sha-256")
	pass, outsider := tlsPass(t, "pg", "baton"), tlsPass(t, "pg", "outsider")
	wrong := "wrong-" + pass
	runTLSCases(t, "postgres", "", []string{pass, wrong, outsider}, []tlsCase{
		{name: "verify-full", backend: good},
		{name: "password from the environment", env: []string{"BATON_SQL_PASSWORD=" + pass}, backend: withUser(t, good, "baton", "")},
		{name: "wrong password", backend: withUser(t, good, "baton", wrong), want: 77, cause: "password authentication failed"},
		{name: "wrong password from the environment", env: []string{"BATON_SQL_PASSWORD=" + wrong},
			backend: withUser(t, good, "baton", ""), want: 77, cause: "password authentication failed"},
		{name: "unknown CA", backend: withQuery(t, good, "sslrootcert", tlsFile(t, "rogue-ca.pem")), want: 77,
			cause: "certificate signed by unknown authority"},
		{name: "no client certificate", backend: withoutQuery(t, good, "sslcert", "sslkey"), want: 77,
			cause: "requires a valid client certificate"},
		{name: "client certificate from another CA", backend: withQuery(t, good, "sslcert", tlsFile(t, "rogue-client.pem"),
			"sslkey", tlsFile(t, "rogue-client.key")), want: 77, cause: "requires a valid client certificate"},
		{name: "no TLS", backend: withQuery(t, good, "sslmode", "disable"), want: 77, cause: "no encryption"},
		{name: "no CREATE on the schema", backend: withUser(t, good, "outsider", outsider), want: 77, cause: "permission denied"},
	})
}

// TestMySQLTLSAuth: MariaDB whose users are REQUIRE SSL. tls=true
// verifies the server against the system roots, which SSL_CERT_FILE
// points at the test CA (Go's crypto/x509 reads it). Without it the
// certificate is from an unknown authority; tls=false, a wrong password
// and a user without grants on the database each exit 77 naming the
// cause.
func TestMySQLTLSAuth(t *testing.T) {
	t.Parallel()
	raw := testenv.Require(t, "BATON_TEST_MYSQL_TLS", "MariaDB with TLS")
	pass, outsider := tlsPass(t, "my", "baton"), tlsPass(t, "my", "outsider")
	wrong := "wrong-" + pass
	good := withQuery(t, raw, "tls", "true")
	ca := []string{"SSL_CERT_FILE=" + tlsFile(t, "ca.pem")}
	runTLSCases(t, "mysql", "", []string{pass, wrong, outsider}, []tlsCase{
		{name: "tls=true", env: ca, backend: good},
		{name: "password from the environment", env: append(ca, "BATON_SQL_PASSWORD="+pass), backend: withUser(t, good, "baton", "")},
		{name: "wrong password", env: ca, backend: withUser(t, good, "baton", wrong), want: 77, cause: "access denied"},
		{name: "unknown CA", env: []string{"SSL_CERT_FILE=" + tlsFile(t, "rogue-ca.pem")}, backend: good, want: 77,
			cause: "certificate signed by unknown authority"},
		{name: "no TLS", env: ca, backend: withQuery(t, raw, "tls", "false"), want: 77, cause: "access denied"},
		{name: "no grant on the database", env: ca, backend: withUser(t, good, "outsider", outsider), want: 77, cause: "access denied"},
		{name: "BATON_SQL_CACERT and a client certificate", backend: good, env: []string{"BATON_SQL_CACERT=" + tlsFile(t, "ca.pem"),
			"BATON_SQL_CERT=" + tlsFile(t, "client.pem"), "BATON_SQL_KEY=" + tlsFile(t, "client.key")}},
		{name: "BATON_SQL_CACERT of another CA", env: []string{"BATON_SQL_CACERT=" + tlsFile(t, "rogue-ca.pem")}, backend: good, want: 77,
			cause: "certificate signed by unknown authority"},
		{name: "BATON_SQL_CACERT without tls=true", env: []string{"BATON_SQL_CACERT=" + tlsFile(t, "ca.pem")},
			backend: withQuery(t, raw, "tls", "false"), want: 64, cause: "need tls=true"},
	})
}

// TestRedisTLSAuth: Redis on a TLS port only, client certificates
// required, the default user off and ACL users: baton (baton's keys,
// channels and commands) and outsider (other keys). rediss:// with
// BATON_REDIS_CACERT, BATON_REDIS_CERT/_KEY and the user's credentials
// from the environment or the URL runs; every refusal exits 77 naming the
// cause: a wrong or no password, an unknown server CA, no client
// certificate or one from another CA, a user whose ACL lacks the lock's
// keys (refused by the acquire, not at connect), and redis:// in plain
// text (the message says to use rediss://).
func TestRedisTLSAuth(t *testing.T) {
	t.Parallel()
	addr := testenv.Require(t, "BATON_TEST_REDIS_TLS", "Redis with TLS and ACL users")
	pass, outsider := tlsPass(t, "redis", "baton"), tlsPass(t, "redis", "outsider")
	wrong := "wrong-" + pass
	certs, user := tlsEnvFuncs(t, "BATON_REDIS", "USERNAME")
	good := certs("ca", "client")
	url := "rediss://" + addr
	runTLSCases(t, "redis", "", []string{pass, wrong, outsider}, []tlsCase{
		{name: "credentials from the environment", env: user(good, "baton", pass), backend: url},
		{name: "credentials in the URL", env: good, backend: "rediss://baton:" + pass + "@" + addr},
		{name: "wrong password", env: user(good, "baton", wrong), backend: url, want: 77, cause: "WRONGPASS"},
		{name: "no credentials", env: good, backend: url, want: 77, cause: "NOAUTH"},
		{name: "unknown CA", env: user(certs("rogue-ca", "client"), "baton", pass), backend: url, want: 77,
			cause: "certificate signed by unknown authority"},
		{name: "no client certificate", env: user(certs("ca", ""), "baton", pass), backend: url, want: 77,
			cause: "certificate required"},
		{name: "client certificate from another CA", env: user(certs("ca", "rogue-client"), "baton", pass), backend: url,
			want: 77, cause: "unknown certificate authority"},
		{name: "ACL without the lock's keys", env: user(good, "outsider", outsider), backend: url, want: 77, cause: "NOPERM"},
		{name: "no TLS", env: user(nil, "baton", pass), backend: "redis://" + addr, want: 77, cause: "use rediss://"},
	})
}

// TestEtcdTLSAuth: etcd on https only, client certificates required, auth
// enabled: user baton's role reads and writes baton/, outsider's only
// other/, reader's only reads baton/. etcds:// with BATON_ETCD_CACERT,
// BATON_ETCD_CERT/_KEY and the user from the environment or the URL runs;
// every refusal exits 77 naming the cause: a wrong password, no user, a
// role without rights on the lock's prefix (at connect) or without write
// rights (at the acquire), an unknown server CA, no client certificate or
// one from another CA, and etcd:// in plain text.
func TestEtcdTLSAuth(t *testing.T) {
	t.Parallel()
	addr := testenv.Require(t, "BATON_TEST_ETCD_TLS", "etcd with TLS and auth")
	pass, outsider, reader := tlsPass(t, "etcd", "baton"), tlsPass(t, "etcd", "outsider"), tlsPass(t, "etcd", "reader")
	wrong := "wrong-" + pass
	certs, user := tlsEnvFuncs(t, "BATON_ETCD", "USER")
	good := certs("ca", "client")
	url := "etcds://" + addr
	runTLSCases(t, "etcd", "baton/", []string{pass, wrong, outsider, reader}, []tlsCase{
		{name: "credentials from the environment", env: user(good, "baton", pass), backend: url},
		{name: "credentials in the URL", env: good, backend: "etcds://baton:" + pass + "@" + addr},
		{name: "wrong password", env: user(good, "baton", wrong), backend: url, want: 77, cause: "authentication failed"},
		{name: "no user", env: good, backend: url, want: 77, cause: "no user given"},
		{name: "role without the prefix", env: user(good, "outsider", outsider), backend: url, want: 77,
			cause: `user "outsider" has no read permission`},
		{name: "role that only reads", env: user(good, "reader", reader), backend: url, want: 77, cause: "permission denied"},
		{name: "unknown CA", env: user(certs("rogue-ca", "client"), "baton", pass), backend: url, want: 77,
			cause: "certificate signed by unknown authority"},
		{name: "no client certificate", env: user(certs("ca", ""), "baton", pass), backend: url, want: 77,
			cause: "bad certificate"},
		{name: "client certificate from another CA", env: user(certs("ca", "rogue-client"), "baton", pass), backend: url,
			want: 77, cause: "bad certificate"},
		{name: "no TLS", env: user(nil, "baton", pass), backend: "etcd://" + addr, want: 77, cause: "use etcds://"},
	})
}

// zkTLSChroot is the persistent chroot of the ZooKeeper TLS tests, whose
// ACL names user baton's digest alone (as an administrator sets it up):
// ZooKeeper takes any digest password, so only an ACL refuses a wrong one.
const zkTLSChroot = "/baton-tls"

// ensureZKChroot creates zkTLSChroot over TLS as user baton if missing.
func ensureZKChroot(t *testing.T, addr, pass string) {
	t.Helper()
	pool := x509.NewCertPool()
	ca, err := os.ReadFile(tlsFile(t, "ca.pem"))
	if err != nil || !pool.AppendCertsFromPEM(ca) {
		t.Fatalf("read ca.pem: %v", err)
	}
	pair, err := tls.LoadX509KeyPair(tlsFile(t, "client.pem"), tlsFile(t, "client.key"))
	if err != nil {
		t.Fatal(err)
	}
	tc := &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}
	// go-zookeeper gives a dial 1s; a TLS handshake with a JVM busy with
	// the other packages' tests took longer, and AddAuth then failed with
	// "could not connect to a server" (one try, one server).
	dialer := func(network, address string, timeout time.Duration) (net.Conn, error) {
		return tls.DialWithDialer(&net.Dialer{Timeout: max(timeout, 15*time.Second)}, network, address, tc)
	}
	conn, _, err := zk.Connect([]string{addr}, 5*time.Second, zk.WithDialer(dialer), zk.WithLogInfo(false),
		zk.WithLogger(zkQuiet{}))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.AddAuth("digest", []byte("baton:"+pass)); err != nil {
		t.Fatalf("AddAuth = %v", err)
	}
	_, err = conn.Create(zkTLSChroot, nil, 0, zk.DigestACL(zk.PermAll, "baton", pass))
	if err != nil && !errors.Is(err, zk.ErrNodeExists) {
		t.Fatalf("create %s = %v", zkTLSChroot, err)
	}
}

type zkQuiet struct{}

func (zkQuiet) Printf(string, ...any) {}

// TestZKTLSAuth: ZooKeeper on its Netty secureClientPort only, client
// certificates required. zk+tls:// with BATON_ZK_CACERT, BATON_ZK_CERT/_KEY
// (the server verified by the name localhost) and the digest user from
// the environment or the URL runs under a chroot only that user may
// write; every refusal exits 77 naming the cause: a wrong password or
// another user (the chroot's ACL), an unknown server CA, no client
// certificate or one from another CA, and zk:// in plain text.
func TestZKTLSAuth(t *testing.T) {
	t.Parallel()
	_, port, err := net.SplitHostPort(testenv.Require(t, "BATON_TEST_ZK_TLS", "ZooKeeper with TLS"))
	if err != nil {
		t.Fatal(err)
	}
	pass := tlsPass(t, "zk", "baton")
	ensureZKChroot(t, net.JoinHostPort("127.0.0.1", port), pass)
	wrong := "wrong-" + pass
	certs, user := tlsEnvFuncs(t, "BATON_ZK", "USER")
	good := certs("ca", "client")
	host := net.JoinHostPort("localhost", port)
	url := "zk+tls://" + host + zkTLSChroot
	runTLSCases(t, "zk", "", []string{pass, wrong}, []tlsCase{
		{name: "credentials from the environment", env: user(good, "baton", pass), backend: url},
		{name: "credentials in the URL", env: good, backend: "zk+tls://baton:" + pass + "@" + host + zkTLSChroot},
		{name: "wrong password", env: user(good, "baton", wrong), backend: url, want: 77,
			cause: `grants nothing to digest user "baton"`},
		{name: "another user", env: user(good, "mallory", pass), backend: url, want: 77,
			cause: `grants nothing to digest user "mallory"`},
		{name: "no user", env: good, backend: url, want: 77, cause: "without digest credentials"},
		{name: "unknown CA", env: user(certs("rogue-ca", "client"), "baton", pass), backend: url, want: 77,
			cause: "certificate signed by unknown authority"},
		{name: "no client certificate", env: user(certs("ca", ""), "baton", pass), backend: url, want: 77,
			cause: "remote error: tls"},
		{name: "client certificate from another CA", env: user(certs("ca", "rogue-client"), "baton", pass), backend: url,
			want: 77, cause: "remote error: tls"},
		{name: "no TLS", env: user(nil, "baton", pass), backend: "zk://" + host + zkTLSChroot, want: 77, cause: "use zk+tls://"},
	})
}

// startTLSRedlock starts three private redis-servers configured as the
// TLS deployment (TLS port only, client certificates required, its ACL
// users) and returns their addresses: Redlock needs independent nodes.
func startTLSRedlock(t *testing.T) []string {
	t.Helper()
	bin := testenv.Binary(t, "redis-server")
	var addrs []string
	for range 3 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
		ln.Close()
		dir := t.TempDir()
		cmd := exec.Command(bin, "--bind", "127.0.0.1", "--port", "0", "--tls-port", port,
			"--tls-cert-file", tlsFile(t, "server.pem"), "--tls-key-file", tlsFile(t, "server.key"),
			"--tls-ca-cert-file", tlsFile(t, "ca.pem"), "--tls-auth-clients", "yes",
			"--aclfile", tlsFile(t, "redis-users.acl"), "--save", "", "--appendonly", "no",
			"--dir", dir, "--logfile", filepath.Join(dir, "redis.log"))
		if err := cmd.Start(); err != nil {
			t.Fatalf("start redis-server: %v", err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		addrs = append(addrs, net.JoinHostPort("127.0.0.1", port))
	}
	for _, a := range addrs {
		deadline := time.Now().Add(10 * time.Second)
		for {
			c, err := net.DialTimeout("tcp", a, time.Second)
			if err == nil {
				c.Close()
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("redis-server on %s not listening within 10s: %v", a, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return addrs
}

// TestRedlockTLSAuth: redlock://…?tls=true on three nodes configured as
// the Redis TLS deployment runs with the CA, the client pair and user
// baton; a wrong password, a user whose ACL lacks baton's keys, an
// unknown CA and no client certificate exit 77 naming the cause.
func TestRedlockTLSAuth(t *testing.T) {
	t.Parallel()
	testenv.Require(t, "BATON_TEST_REDIS_TLS", "Redis with TLS and ACL users")
	pass, outsider := tlsPass(t, "redis", "baton"), tlsPass(t, "redis", "outsider")
	wrong := "wrong-" + pass
	url := "redlock://" + strings.Join(startTLSRedlock(t), ",") + "?tls=true"
	certs, user := tlsEnvFuncs(t, "BATON_REDIS", "USERNAME")
	good := certs("ca", "client")
	runTLSCases(t, "redlock", "", []string{pass, wrong, outsider}, []tlsCase{
		{name: "credentials from the environment", env: user(good, "baton", pass), backend: url},
		{name: "wrong password", env: user(good, "baton", wrong), backend: url, want: 77, cause: "WRONGPASS"},
		{name: "ACL without the lock's keys", env: user(good, "outsider", outsider), backend: url, want: 77, cause: "NOPERM"},
		{name: "unknown CA", env: user(certs("rogue-ca", "client"), "baton", pass), backend: url, want: 77,
			cause: "certificate signed by unknown authority"},
		{name: "no client certificate", env: user(certs("ca", ""), "baton", pass), backend: url, want: 77,
			cause: "certificate required"},
	})
}

// TestTLSRefusalJSON: with --log-format json, a TLS refusal leaves only
// JSON on stderr (go-redis logs a retired connection by itself unless
// silenced), and the record names the cause.
func TestTLSRefusalJSON(t *testing.T) {
	t.Parallel()
	addr := testenv.Require(t, "BATON_TEST_REDIS_TLS", "Redis with TLS and ACL users")
	env := []string{"BATON_REDIS_CACERT=" + tlsFile(t, "ca.pem"), "BATON_REDIS_USERNAME=baton",
		"BATON_REDIS_PASSWORD=" + tlsPass(t, "redis", "baton")}
	r := runBaton(t, env, "run", "--log-format", "json", "--backend", "rediss://"+addr, lockName(t), "--", "true")
	if r.code != 77 {
		t.Errorf("exit = %d, want 77; stderr:\n%s", r.code, r.stderr)
	}
	for _, line := range strings.Split(strings.TrimSpace(r.stderr), "\n") {
		if !json.Valid([]byte(line)) {
			t.Errorf("stderr line is not JSON: %q", line)
		}
	}
	if !strings.Contains(r.stderr, "certificate required") {
		t.Errorf("stderr does not name the cause:\n%s", r.stderr)
	}
}

// tlsEnvFuncs returns an engine's environment builders for the TLS
// deployments: certs(ca, pair) sets PREFIX_CACERT to ca's file and, unless
// pair is "", the client pair PREFIX_CERT / PREFIX_KEY; user adds the user
// (PREFIX_<userVar>) and PREFIX_PASSWORD to env.
func tlsEnvFuncs(t *testing.T, prefix, userVar string) (certs func(ca, pair string) []string, user func(env []string, name, pass string) []string) {
	certs = func(ca, pair string) []string {
		env := []string{prefix + "_CACERT=" + tlsFile(t, ca+".pem")}
		if pair != "" {
			env = append(env, prefix+"_CERT="+tlsFile(t, pair+".pem"), prefix+"_KEY="+tlsFile(t, pair+".key"))
		}
		return env
	}
	user = func(env []string, name, pass string) []string {
		return append(env, prefix+"_"+userVar+"="+name, prefix+"_PASSWORD="+pass)
	}
	return certs, user
}
