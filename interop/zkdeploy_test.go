package interop_test

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/baton-go/baton/batontest/testenv"
	"github.com/go-zookeeper/zk"
)

// zkDeploy is a ZooKeeper deployment the Curator tests run on, with what
// each of the three clients (baton, Curator, the test's inspector) needs
// to reach it: the plain server, or the TLS one that also wants a client
// certificate and on which both lock clients authenticate as a digest
// user and protect their nodes with that user's ACL.
type zkDeploy struct {
	addr    string
	backend string // baton's --backend
	// batonEnv is baton's environment: BATON_ZK_CACERT/CERT/KEY and the
	// digest user.
	batonEnv []string
	// jvm are the JVM system properties of Curator's side (see
	// java/CuratorRecipes.java) and jars what it needs on its class path
	// beyond Curator's (Netty for TLS, from libnetty-java).
	jvm, jars []string
	// tls is the inspector's TLS configuration and digest its "user:pass",
	// both nil for the plain server.
	tls    *tls.Config
	digest []byte
	// acl is what every node of a lock must carry, whichever client
	// created it; nil leaves ACLs unchecked (the plain server's are open).
	acl []zk.ACL
}

// zkTLSUser is the digest user of both lock clients on the TLS server;
// its password is zk-baton.pass in the certificates' directory.
const zkTLSUser = "baton"

// nettyJars are the jars ZooKeeper's Netty client socket needs, the only
// one that speaks TLS (libnetty-java, which libzookeeper-java pulls in).
var nettyJars = []string{
	"netty-buffer", "netty-codec", "netty-common", "netty-handler", "netty-resolver",
	"netty-transport", "netty-transport-native-epoll", "netty-transport-native-unix-common",
}

// plainZK is the plain ZooKeeper server, open to all.
func plainZK(t *testing.T) zkDeploy {
	t.Helper()
	addr := testenv.ZK(t)
	return zkDeploy{addr: addr, backend: "zk://" + addr}
}

// tlsZK is the ZooKeeper server that speaks only TLS and wants a client
// certificate (scripts/servers.d/tls.sh), used as digest user baton.
func tlsZK(t *testing.T) zkDeploy {
	t.Helper()
	addr := testenv.Require(t, "BATON_TEST_ZK_TLS", "ZooKeeper with TLS")
	dir := testenv.Require(t, "BATON_TEST_TLS_DIR", "TLS test certificates")
	file := func(name string) string { return filepath.Join(dir, name) }
	for _, name := range []string{"ca.pem", "client.pem", "client.key", "client.p12", "truststore.p12", "keystore.pass", "zk-baton.pass"} {
		if exists(file(name)) {
			continue
		}
		testenv.Unavailable(t, file(name)+" is missing: restart the servers (scripts/servers.sh) so tls.sh writes it")
	}
	pass, err := os.ReadFile(file("zk-baton.pass"))
	if err != nil {
		t.Fatal(err)
	}
	password := strings.TrimSpace(string(pass))
	pool := x509.NewCertPool()
	ca, err := os.ReadFile(file("ca.pem"))
	if err != nil || !pool.AppendCertsFromPEM(ca) {
		t.Fatalf("%s: no CA certificate (%v)", file("ca.pem"), err)
	}
	pair, err := tls.LoadX509KeyPair(file("client.pem"), file("client.key"))
	if err != nil {
		t.Fatal(err)
	}
	return zkDeploy{
		addr:    addr,
		backend: "zk+tls://" + addr,
		batonEnv: []string{
			"BATON_ZK_CACERT=" + file("ca.pem"), "BATON_ZK_CERT=" + file("client.pem"), "BATON_ZK_KEY=" + file("client.key"),
			"BATON_ZK_USER=" + zkTLSUser, "BATON_ZK_PASSWORD=" + password,
		},
		// Passwords by file: nothing secret on the JVM's command line.
		jvm: []string{
			"-Dzookeeper.client.secure=true",
			"-Dzookeeper.clientCnxnSocket=org.apache.zookeeper.ClientCnxnSocketNetty",
			"-Dzookeeper.ssl.keyStore.location=" + file("client.p12"),
			"-Dzookeeper.ssl.keyStore.passwordPath=" + file("keystore.pass"),
			"-Dzookeeper.ssl.keyStore.type=PKCS12",
			"-Dzookeeper.ssl.trustStore.location=" + file("truststore.p12"),
			"-Dzookeeper.ssl.trustStore.passwordPath=" + file("keystore.pass"),
			"-Dzookeeper.ssl.trustStore.type=PKCS12",
			"-Drecipes.digest.user=" + zkTLSUser,
			"-Drecipes.digest.passwordPath=" + file("zk-baton.pass"),
		},
		jars:   nettyJars,
		tls:    &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12},
		digest: []byte(zkTLSUser + ":" + password),
		acl:    zk.DigestACL(zk.PermAll, zkTLSUser, password),
	}
}

// baton is `baton run` (or `baton elect`) on the deployment: see batonSide.
func (d zkDeploy) baton(who, recipe string) side {
	s := batonSide(d.backend, who, recipe)
	s.env = d.batonEnv
	return s
}

// connect returns the inspector's go-zookeeper session, over TLS and
// authenticated when the deployment wants it.
func (d zkDeploy) connect(t *testing.T) *zk.Conn {
	t.Helper()
	dial := zk.Dialer(net.DialTimeout)
	if d.tls != nil {
		dial = func(network, address string, timeout time.Duration) (net.Conn, error) {
			return tls.DialWithDialer(&net.Dialer{Timeout: timeout}, network, address, d.tls)
		}
	}
	conn, _, err := zk.Connect([]string{d.addr}, 5*time.Second, zk.WithDialer(dial), zk.WithLogger(quiet{}))
	if err != nil {
		t.Fatalf("zk.Connect(%q) = %v", d.addr, err)
	}
	t.Cleanup(conn.Close)
	if d.digest != nil {
		if err := conn.AddAuth("digest", d.digest); err != nil {
			t.Fatalf("AddAuth(digest, %s) = %v", zkTLSUser, err)
		}
	}
	return conn
}

// checkACLs fails the test unless root, its parent and every node below
// root carry the deployment's ACL and nothing else: both clients must
// protect their nodes alike, or one could not read or delete what the
// other made.
func (d zkDeploy) checkACLs(t *testing.T, conn *zk.Conn, root string) {
	t.Helper()
	if d.acl == nil {
		return
	}
	// check reports whether p still exists: an entry may go between its
	// parent's listing and its own.
	check := func(p string) bool {
		acl, _, err := conn.GetACL(p)
		if errors.Is(err, zk.ErrNoNode) {
			return false
		}
		if err != nil {
			t.Fatalf("GetACL(%s) = %v", p, err)
		}
		if !slices.Equal(acl, d.acl) {
			t.Errorf("ACL of %s = %v, want %v alone", p, acl, d.acl)
		}
		return true
	}
	check(path.Dir(root))
	for todo := []string{root}; len(todo) > 0; {
		p := todo[0]
		todo = todo[1:]
		if !check(p) {
			continue
		}
		kids, _, err := conn.Children(p)
		if err != nil && !errors.Is(err, zk.ErrNoNode) {
			t.Fatalf("Children(%s) = %v", p, err)
		}
		for _, k := range kids {
			todo = append(todo, p+"/"+k)
		}
	}
}
