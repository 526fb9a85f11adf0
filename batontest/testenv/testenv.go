// Package testenv finds the real servers baton's tests run against. A test
// that needs a server calls the matching function: without the server's
// environment variable it skips with a message when run by hand, and fails
// under CI=true, where a missing server is a broken setup, never a pass.
//
// scripts/servers.sh starts the servers and prints the variables.
//
// It serves baton's own tests, not a user's. It is public only because the
// tests of every baton module use it, the root module's own among them,
// and the root module requires no other baton module (docs/design/modules.md).
package testenv

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// CI reports whether the tests run under CI (CI=true).
func CI() bool {
	v := strings.ToLower(os.Getenv("CI"))
	return v == "true" || v == "1"
}

// Require returns the value of the environment variable env naming a
// server, or skips (by hand) / fails (under CI) the test when it is unset.
func Require(t testing.TB, env, what string) string {
	t.Helper()
	v := os.Getenv(env)
	if v != "" {
		return v
	}
	Unavailable(t, what+" not configured: set "+env+" (eval \"$(scripts/servers.sh start)\")")
	return ""
}

// Unavailable ends a test that lacks what its setup must give (a server,
// a program, a file scripts/servers.sh writes, root, a pseudo-terminal):
// it skips with msg when run by hand, and fails under CI=true, where
// scripts/test.sh gives all of them and a missing one is a broken setup,
// never a pass.
func Unavailable(t testing.TB, msg string) {
	t.Helper()
	if CI() {
		t.Fatal(msg + " — fails under CI=true")
	}
	t.Skip(msg)
}

// ZK returns the address (host:port) of the private ZooKeeper server.
func ZK(t testing.TB) string { return Require(t, "BATON_TEST_ZK", "ZooKeeper") }

// Postgres returns a PostgreSQL URL for a database the tests may use.
func Postgres(t testing.TB) string { return Require(t, "BATON_TEST_POSTGRES", "PostgreSQL") }

// MySQL returns a go-sql-driver DSN for a MariaDB/MySQL database.
func MySQL(t testing.TB) string { return Require(t, "BATON_TEST_MYSQL", "MariaDB/MySQL") }

// Redis returns the address (host:port) of a Redis server the tests may
// flush keys of their own on.
func Redis(t testing.TB) string { return Require(t, "BATON_TEST_REDIS", "Redis") }

// Binary looks up a program on PATH that a test needs (java, etcdctl, …),
// skipping by hand and failing under CI when it is missing.
func Binary(t testing.TB, name string) string {
	t.Helper()
	for _, dir := range strings.Split(os.Getenv("PATH"), ":") {
		p := dir + "/" + name
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return p
		}
	}
	Unavailable(t, name+" not found on PATH (scripts/test.sh installs it)")
	return ""
}

// Redlock returns the addresses of the private, independent redis-servers
// of the Redlock tests (five, persisting every write). Tests may flush and
// reconfigure them.
func Redlock(t testing.TB) []string {
	return strings.Split(Require(t, "BATON_TEST_REDLOCK", "Redlock redis-servers"), ",")
}

// RedisPair returns a private primary and replica (not yet replicating:
// the test wires them, usually through a fault proxy). Tests may flush,
// reconfigure and restart them.
func RedisPair(t testing.TB) (primary, replica string) {
	return Require(t, "BATON_TEST_REDIS_PRIMARY", "Redis primary"), Require(t, "BATON_TEST_REDIS_REPLICA", "Redis replica")
}

// RedisCluster returns the address of a one-node Redis Cluster owning
// every hash slot (scripts there obey Cluster's cross-slot rules).
func RedisCluster(t testing.TB) string {
	return Require(t, "BATON_TEST_REDIS_CLUSTER", "Redis Cluster node")
}

// Etcd returns the address (host:port) of the private etcd server
// (Debian's etcd-server, started by scripts/servers.sh). Tests share it
// with every other package of the run: keep to names of your own.
func Etcd(t testing.TB) string { return Require(t, "BATON_TEST_ETCD", "etcd") }

// EtcdMain returns the etcd address for a TestMain whose every test needs
// the server. Without BATON_TEST_ETCD it ends the test binary: with a
// message and status 0 when run by hand, status 1 under CI=true.
func EtcdMain() string {
	if v := os.Getenv("BATON_TEST_ETCD"); v != "" {
		return v
	}
	msg := "etcd not configured: set BATON_TEST_ETCD (eval \"$(scripts/servers.sh start)\")"
	if CI() {
		fmt.Fprintln(os.Stderr, msg+" — a missing server fails under CI=true")
		os.Exit(1)
	}
	fmt.Fprintln(os.Stderr, msg+": tests not run")
	os.Exit(0)
	return ""
}

// K8s returns the path of an admin kubeconfig of the private
// kube-apiserver, whose context's namespace (baton-test) the tests may
// fill with Leases of their own.
func K8s(t testing.TB) string { return Require(t, "BATON_TEST_K8S", "kube-apiserver") }

// K8sAddr returns the kube-apiserver's address (host:port), for a fault
// proxy in front of it: its certificate is valid for 127.0.0.1.
func K8sAddr(t testing.TB) string { return Require(t, "BATON_TEST_K8S_ADDR", "kube-apiserver address") }

// K8sLimited returns a kubeconfig of a user who may only get, list,
// watch, create, update and delete Leases in the tests' namespace.
func K8sLimited(t testing.TB) string {
	return Require(t, "BATON_TEST_K8S_LIMITED", "kube-apiserver limited user")
}

// K8sNoUpdate returns a kubeconfig of a user with K8sLimited's rights
// but update.
func K8sNoUpdate(t testing.TB) string {
	return Require(t, "BATON_TEST_K8S_NOUPDATE", "kube-apiserver user without update")
}
