package main_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/baton-go/baton/batontest/testenv"
)

// redisPassword is the private server's requirepass.
const redisPassword = "s3cr3t-redis-pw"

// privateRedis starts a redis-server of the test's own on a free loopback
// port, with a password and without persistence, and returns its address;
// it is killed at cleanup. Every key the CLI writes dies with it.
func privateRedis(t *testing.T) string {
	t.Helper()
	return startRedis(t, nil)
}

// startRedis is privateRedis; with tc set, the server speaks TLS only,
// with tc's files (see selfSigned), and clients need no certificate.
func startRedis(t *testing.T, tc *tlsFiles) string {
	t.Helper()
	bin := testenv.Binary(t, "redis-server")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	dir := t.TempDir()
	args := []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--requirepass", redisPassword,
		"--save", "", "--appendonly", "no", "--dir", dir, "--logfile", filepath.Join(dir, "redis.log")}
	o := &redis.Options{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), Password: redisPassword}
	if tc != nil {
		args = append(args, "--port", "0", "--tls-port", strconv.Itoa(port), "--tls-cert-file", tc.cert, "--tls-key-file", tc.key,
			"--tls-ca-cert-file", tc.ca, "--tls-auth-clients", "no")
		o.TLSConfig = &tls.Config{RootCAs: tc.pool, ServerName: tc.name, MinVersion: tls.VersionTLS12}
	}
	cmd := exec.Command(bin, args...)
	if err := cmd.Start(); err != nil {
		t.Fatalf("start redis-server: %v", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	addr := o.Addr
	rdb := redis.NewClient(o)
	defer rdb.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := rdb.Ping(ctx).Err()
		cancel()
		if err == nil {
			return addr
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(dir, "redis.log"))
			t.Fatalf("private redis-server on %s not answering within 10s: %v\n%s", addr, err, log)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// tlsFiles are a throw-away CA and a server certificate for 127.0.0.1.
type tlsFiles struct {
	ca, cert, key string
	name          string // the server's name in its certificate
	pool          *x509.CertPool
}

// selfSigned writes a CA and a server certificate signed by it (for the IP
// 127.0.0.1) into dir.
func selfSigned(t *testing.T, dir string) *tlsFiles {
	t.Helper()
	return selfSignedFor(t, dir, "127.0.0.1")
}

// selfSignedFor is selfSigned for the certificate name host: an IP
// address, or a DNS name (then the certificate names no IP at all).
func selfSignedFor(t *testing.T, dir, host string) *tlsFiles {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "baton test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: host},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if ip := net.ParseIP(host); ip != nil {
		tmpl.IPAddresses = []net.IP{ip}
	} else {
		tmpl.DNSNames = []string{host}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	f := &tlsFiles{name: host, ca: filepath.Join(dir, "ca.pem"), cert: filepath.Join(dir, "server.pem"), key: filepath.Join(dir, "server.key"), pool: x509.NewCertPool()}
	f.pool.AddCert(ca)
	for path, block := range map[string]*pem.Block{
		f.ca: {Type: "CERTIFICATE", Bytes: caDER}, f.cert: {Type: "CERTIFICATE", Bytes: der}, f.key: {Type: "EC PRIVATE KEY", Bytes: keyDER},
	} {
		if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// TestRedisTLS: rediss:// reaches a TLS-only server with the CA from
// BATON_REDIS_CACERT; without it the certificate is refused (77).
func TestRedisTLS(t *testing.T) {
	t.Parallel()
	tc := selfSigned(t, t.TempDir())
	addr := startRedis(t, tc)
	url := "rediss://" + addr
	env := []string{"BATON_REDIS_PASSWORD=" + redisPassword}
	r := runBaton(t, append(env, "BATON_REDIS_CACERT="+tc.ca), "run", "--backend", url, lockName(t), "--", "sh", "-c", `[ "$BATON_ENGINE" = redis ]`)
	if r.code != 0 {
		t.Errorf("run on rediss:// with BATON_REDIS_CACERT: exit = %d, want 0; stderr:\n%s", r.code, r.stderr)
	}
	r = runBaton(t, env, "run", "--backend", url, "--connect-timeout", "2s", lockName(t), "--", "true")
	if r.code != 77 {
		t.Errorf("run on rediss:// without the CA: exit = %d, want 77; stderr:\n%s", r.code, r.stderr)
	}
	r = runBaton(t, append(env, "BATON_REDIS_CACERT="+filepath.Join(t.TempDir(), "missing.pem")), "run", "--backend", url, lockName(t), "--", "true")
	if r.code != 64 {
		t.Errorf("run on rediss:// with a missing CA file: exit = %d, want 64; stderr:\n%s", r.code, r.stderr)
	}
}

// redisInspect runs `baton inspect --json` with env and returns its
// entries.
func redisInspect(t *testing.T, env []string, url, name string) []inspectEntry {
	t.Helper()
	d, _ := inspectJSON(t, env, url, name)
	return d.entries()
}

// TestRedis: on a private redis-server with a password given through the
// environment, the child gets BATON_ENGINE=redis and a token; a second
// run exits 75 with --wait 0; a waiting run does not start while the
// holder holds, shows in inspect as a waiting intent, and runs once the
// holder leaves, with a larger token; credentials in the URL work too.
func TestRedis(t *testing.T) {
	t.Parallel()
	addr := privateRedis(t)
	url := "redis://" + addr + "/0"
	env := []string{"BATON_REDIS_PASSWORD=" + redisPassword}
	name, dir := lockName(t), t.TempDir()
	mark := filepath.Join(dir, "mark")
	holder := startBaton(t, env, "run", "--backend", url, "--ttl", "3", name, "--", "sh", "-c", markScript(mark))
	engine, tok := readMark(t, mark)
	if engine != "redis" {
		t.Errorf("BATON_ENGINE = %q, want redis", engine)
	}
	if r := runBaton(t, env, "run", "--backend", url, "--wait", "0", name, "--", "true"); r.code != 75 {
		t.Errorf("second run --wait 0 exit = %d, want 75; stderr:\n%s", r.code, r.stderr)
	}

	mark2 := filepath.Join(dir, "mark2")
	waiter := startBaton(t, env, "run", "--backend", url, "--wait", "20s", name, "--", "sh", "-c", markScript(mark2))
	var q []inspectEntry
	deadline := time.Now().Add(10 * time.Second)
	for {
		q = redisInspect(t, env, url, name)
		if len(q) >= 2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(q) != 2 || q[0].Role != "holder" || q[0].Token == nil || *q[0].Token != tok ||
		q[0].LeftMS == nil || *q[0].LeftMS <= 0 || *q[0].LeftMS > 3000 || q[1].Role != "waiting" {
		t.Errorf("inspect = %+v, want the holder (token %d, 0 < lease_left_ms ≤ 3000) and one waiting intent", q, tok)
	}
	if _, err := os.Stat(mark2); err == nil {
		t.Fatalf("the waiter ran while the holder held")
	}
	stopHolder(t, holder)
	_, tok2 := readMark(t, mark2)
	if tok2 <= tok {
		t.Errorf("waiter's token = %d, want > %d", tok2, tok)
	}
	stopHolder(t, waiter)

	// Credentials in the URL (user "default" is Redis' requirepass user).
	withURL := "redis://default:" + redisPassword + "@" + addr
	r := runBaton(t, nil, "run", "--backend", withURL, "--wait", "5s", name, "--", "sh", "-c", `echo "$BATON_ENGINE $BATON_TOKEN"`)
	if r.code != 0 {
		t.Fatalf("run with credentials in the URL: exit = %d, want 0; stderr:\n%s", r.code, r.stderr)
	}
	if strings.Contains(r.stderr, redisPassword) {
		t.Errorf("stderr shows the password:\n%s", r.stderr)
	}
	if q := redisInspect(t, env, url, name); len(q) != 0 {
		t.Errorf("inspect after every run ended = %+v, want no entries", q)
	}
}

// TestRedisRecipes: --read runs share, --shared 2 admits two, elect leads
// with an epoch; on the Redis engine.
func TestRedisRecipes(t *testing.T) {
	t.Parallel()
	addr := privateRedis(t)
	url := "redis://" + addr
	env := []string{"BATON_REDIS_PASSWORD=" + redisPassword}
	dir := t.TempDir()
	for i, mode := range [][]string{{"--read"}, {"--shared", "2"}} {
		name := lockName(t)
		a, b := filepath.Join(dir, fmt.Sprintf("%d-a", i)), filepath.Join(dir, fmt.Sprintf("%d-b", i))
		// Each waits (holding) for the other's mark: only possible if both
		// hold at once.
		script := func(me, other string) string {
			return fmt.Sprintf(`touch %q; i=0; while [ ! -e %q ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done; [ -e %q ]`, me, other, other)
		}
		pa := startBaton(t, env, append(append([]string{"run", "--backend", url}, mode...), name, "--", "sh", "-c", script(a, b))...)
		pb := startBaton(t, env, append(append([]string{"run", "--backend", url}, mode...), name, "--", "sh", "-c", script(b, a))...)
		for _, p := range []*proc{pa, pb} {
			if r := p.wait(t, 20*time.Second); r.code != 0 {
				t.Errorf("run %v: exit = %d, want 0 (both held at once); stderr:\n%s", mode, r.code, r.stderr)
			}
		}
	}
	name := lockName(t)
	r := runBaton(t, env, "elect", "--backend", url, name, "--", "sh", "-c", `[ "$BATON_EPOCH" -gt 0 ] && [ "$BATON_EPOCH" = "$BATON_TOKEN" ]`)
	if r.code != 0 {
		t.Errorf("elect: exit = %d, want 0 (a positive epoch equal to the token); stderr:\n%s", r.code, r.stderr)
	}
}

// TestRedisRefused: a wrong or missing password exits 77, an unreachable
// server 69 (promptly), a bad URL and clean 64; the password is never
// printed.
func TestRedisRefused(t *testing.T) {
	t.Parallel()
	addr := privateRedis(t)
	startup := runBaton(t, nil, "version").took
	tests := []struct {
		name string
		env  []string
		args []string
		want int
	}{
		{"wrong password", []string{"BATON_REDIS_PASSWORD=nope-" + redisPassword}, []string{"run", "--backend", "redis://" + addr, "n", "--", "true"}, 77},
		{"wrong password in URL", nil, []string{"run", "--backend", "redis://default:nope-" + redisPassword + "@" + addr, "n", "--", "true"}, 77},
		{"no password", nil, []string{"run", "--backend", "redis://" + addr, "n", "--", "true"}, 77},
		{"unreachable", nil, []string{"run", "--backend", "redis://127.0.0.1:1", "--connect-timeout", "500ms", "n", "--", "true"}, 69},
		{"bad database", nil, []string{"run", "--backend", "redis://" + addr + "/zero", "n", "--", "true"}, 64},
		{"unknown parameter", nil, []string{"run", "--backend", "redis://" + addr + "/0?bogus=1", "n", "--", "true"}, 64},
		{"ttl below the minimum", nil, []string{"run", "--backend", "redis://" + addr, "--ttl", "100ms", "n", "--", "true"}, 64},
		{"clean", nil, []string{"clean", "--backend", "redis://" + addr, "n"}, 64},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runBaton(t, tt.env, tt.args...)
			if r.code != tt.want {
				t.Errorf("baton %q exit = %d, want %d; stderr:\n%s", tt.args, r.code, tt.want, r.stderr)
			}
			if strings.Contains(r.stderr, redisPassword) {
				t.Errorf("stderr shows the password:\n%s", r.stderr)
			}
			if tt.want == 69 {
				if bound := startup + 500*time.Millisecond + 2*time.Second; r.took > bound {
					t.Errorf("run took %v with --connect-timeout 500ms (start-up %v), want ≤ %v", r.took, startup, bound)
				}
			}
		})
	}
}
