package interop_test

import (
	"errors"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/baton-go/baton/batontest/testenv"
	"github.com/go-zookeeper/zk"
)

// javaLib is where Debian installs Java libraries.
const javaLib = "/usr/share/java"

// curatorJars are the jars CuratorRecipes needs to compile and run, by their
// Debian names: libcurator-recipes-java and what it depends on
// (libzookeeper-java, libguava-java, libslf4j-java). The ZooKeeper client
// talks NIO by default, so the plain server needs no netty jar (TLS does:
// zkDeploy.jars).
var curatorJars = []string{
	"curator-client", "curator-framework", "curator-recipes",
	"zookeeper", "zookeeper-jute", "guava", "slf4j-api",
}

// quietJar binds slf4j to no-op logging, silencing its "no binding"
// warning; optional.
const quietJar = "slf4j-nop"

// uuidRE is the protected-create prefix of Curator 5 entries.
const uuidRE = `^_c_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-`

// The entries of Curator 5's recipes: protected-create prefix, the
// recipe's marker, a 10-digit sequence. baton's entries must look the same
// or the two would not see each other's.
var (
	curatorEntry   = regexp.MustCompile(uuidRE + `lock-[0-9]{10}$`)           // InterProcessMutex
	curatorRWEntry = regexp.MustCompile(uuidRE + `__(READ|WRIT)__[0-9]{10}$`) // InterProcessReadWriteLock
	curatorLease   = regexp.MustCompile(uuidRE + `lease-[0-9]{10}$`)          // InterProcessSemaphoreV2, below leases/
	curatorLatch   = regexp.MustCompile(uuidRE + `latch-[0-9]{10}$`)          // LeaderLatch
)

// findJar returns the jar of a Debian name, versioned or not.
func findJar(name string) (string, bool) {
	if p := filepath.Join(javaLib, name+".jar"); exists(p) {
		return p, true
	}
	m, _ := filepath.Glob(filepath.Join(javaLib, name+"-[0-9]*.jar"))
	if len(m) > 0 {
		return m[len(m)-1], true
	}
	return "", false
}

// compiled caches java/CuratorRecipes.java compiled once per test binary.
var compiled struct {
	sync.Mutex
	java, cp string
}

// needJars returns the paths of the jars of names, which Debian's package
// pkg installs; a missing one skips by hand and fails under CI=true.
func needJars(t *testing.T, pkg string, names []string) []string {
	t.Helper()
	var jars, missing []string
	for _, name := range names {
		if p, ok := findJar(name); ok {
			jars = append(jars, p)
		} else {
			missing = append(missing, name+".jar")
		}
	}
	if len(missing) > 0 {
		testenv.Unavailable(t, "Curator interop needs "+strings.Join(missing, ", ")+" in "+javaLib+
			" (apt-get install "+pkg+"; scripts/test.sh does)")
	}
	return jars
}

// curator compiles java/CuratorRecipes.java (once per test binary) against
// Debian's jars and returns a function giving the argv of one run of
// recipe on zd (see the program's usage). A missing JDK or jar skips by
// hand and fails under CI=true.
func curator(t *testing.T, zd zkDeploy) func(recipe, path, dir, who, hold string, n int) []string {
	t.Helper()
	javac := testenv.Binary(t, "javac")
	java := testenv.Binary(t, "java")
	jars := needJars(t, "libcurator-recipes-java", curatorJars)
	extra := needJars(t, "libnetty-java", zd.jars)
	if p, ok := findJar(quietJar); ok {
		jars = append(jars, p)
	}
	compiled.Lock()
	defer compiled.Unlock()
	if compiled.cp == "" {
		classes := filepath.Join(scratch, "classes")
		src, err := filepath.Abs(filepath.Join("java", "CuratorRecipes.java"))
		if err != nil {
			t.Fatal(err)
		}
		cp := strings.Join(jars, ":")
		if out, err := exec.Command(javac, "-d", classes, "-cp", cp, src).CombinedOutput(); err != nil {
			t.Fatalf("javac CuratorRecipes.java against %s: %v\n%s", cp, err, out)
		}
		compiled.java, compiled.cp = java, classes+":"+cp
	}
	java, cp := compiled.java, strings.Join(append([]string{compiled.cp}, extra...), ":")
	return func(recipe, path, dir, who, hold string, n int) []string {
		// A small serial heap and the C1 compiler start a JVM fastest on
		// the two shared cores.
		argv := append([]string{java, "-Xmx64m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"}, zd.jvm...)
		return append(argv, "-cp", cp, "CuratorRecipes", zd.addr, recipe, path, dir, who, hold, strconv.Itoa(n))
	}
}

// curatorSides returns a maker of Curator participants taking recipe on
// the lock's path ("/" + name) of zd.
func curatorSides(t *testing.T, zd zkDeploy) func(who, recipe string) side {
	t.Helper()
	cur := curator(t, zd)
	return func(who, recipe string) side {
		return side{who: who, gated: true, argv: func(name, dir, who, hold string, n int) []string {
			return cur(recipe, "/"+name, dir, who, hold, n)
		}}
	}
}

// zkServer connects a go-zookeeper client to inspect the lock directory of
// zd from outside both clients. While a waiter is queued it checks the
// ACLs of the lock's nodes, which both clients have created by then.
func zkServer(t *testing.T, zd zkDeploy) server {
	t.Helper()
	conn := zd.connect(t)
	return server{
		engine:  "zk",
		backend: zd.backend,
		entry:   curatorEntry,
		waiting: func(t *testing.T, name string) {
			t.Helper()
			zd.checkACLs(t, conn, "/"+name)
		},
		queue: func(t *testing.T, name string) []string {
			t.Helper()
			children, _, err := conn.Children("/" + name)
			if errors.Is(err, zk.ErrNoNode) {
				return nil
			}
			if err != nil {
				t.Fatalf("Children(%q) = %v", "/"+name, err)
			}
			return children
		},
	}
}

type quiet struct{}

func (quiet) Printf(string, ...any) {}

// TestCuratorAndBatonMutex checks that `baton run` and Curator's
// InterProcessMutex on the same ZooKeeper path exclude each other in both
// start orders and under contention.
func TestCuratorAndBatonMutex(t *testing.T) { curatorMutex(t, plainZK) }

// TestCuratorAndBatonMutexTLS runs the same on the TLS server, both clients
// authenticated as one digest user whose ACL every lock node must carry.
func TestCuratorAndBatonMutexTLS(t *testing.T) { curatorMutex(t, tlsZK) }

func curatorMutex(t *testing.T, deploy func(*testing.T) zkDeploy) {
	needBaton(t)
	zd := deploy(t)
	cur := curatorSides(t, zd)
	srv := zkServer(t, zd)
	bat := func(who string) side { return zd.baton(who, "mutex") }

	t.Run("CuratorFirst", func(t *testing.T) {
		ordered(t, srv, cur("curator", "mutex"), bat("baton"))
	})
	t.Run("BatonFirst", func(t *testing.T) {
		ordered(t, srv, bat("baton"), cur("curator", "mutex"))
	})
	t.Run("Interleaved", func(t *testing.T) {
		interleaved(t, srv, 5, "0.05",
			cur("curator-1", "mutex"), cur("curator-2", "mutex"), bat("baton-1"), bat("baton-2"))
	})
}

// TestCuratorAndBatonRWLock checks `baton run --read/--write NAME` against
// Curator's InterProcessReadWriteLock("/NAME"): a writer of either client
// excludes writers and readers of the other in both start orders, and
// readers of the two clients hold together (a writer then waits for both).
func TestCuratorAndBatonRWLock(t *testing.T) { curatorRWLock(t, plainZK) }

// TestCuratorAndBatonRWLockTLS runs the same on the TLS server with digest
// authentication and ACLs.
func TestCuratorAndBatonRWLockTLS(t *testing.T) { curatorRWLock(t, tlsZK) }

func curatorRWLock(t *testing.T, deploy func(*testing.T) zkDeploy) {
	needBaton(t)
	zd := deploy(t)
	cur := curatorSides(t, zd)
	srv := zkServer(t, zd).recipe(curatorRWEntry, "", 0)
	bat := zd.baton

	for _, tc := range []struct {
		name          string
		first, second side
	}{
		{"CuratorWriterThenBatonWriter", cur("curator-w", "write"), bat("baton-w", "write")},
		{"BatonWriterThenCuratorWriter", bat("baton-w", "write"), cur("curator-w", "write")},
		{"CuratorWriterThenBatonReader", cur("curator-w", "write"), bat("baton-r", "read")},
		{"BatonReaderThenCuratorWriter", bat("baton-r", "read"), cur("curator-w", "write")},
		{"BatonWriterThenCuratorReader", bat("baton-w", "write"), cur("curator-r", "read")},
		{"CuratorReaderThenBatonWriter", cur("curator-r", "read"), bat("baton-w", "write")},
	} {
		t.Run(tc.name, func(t *testing.T) { ordered(t, srv, tc.first, tc.second) })
	}
	// Readers share: the second reader enters while the first is inside
	// (queued waits for that); a writer of the other order's client then
	// waits for both.
	for _, tc := range []struct {
		name    string
		readers []side
		writer  side
	}{
		{"CuratorReaderWithBatonReader", []side{cur("curator-r", "read"), bat("baton-r", "read")}, bat("baton-w", "write")},
		{"BatonReaderWithCuratorReader", []side{bat("baton-r", "read"), cur("curator-r", "read")}, cur("curator-w", "write")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := queued(t, srv, tc.readers, tc.writer, len(tc.readers))
			if v.mixedPeak != 2 {
				t.Errorf("at most %d readers of both clients were inside at once, want 2 (readers share)", v.mixedPeak)
			}
		})
	}
	t.Run("Interleaved", func(t *testing.T) {
		interleaved(t, srv, 4, "0.05",
			cur("curator-w", "write"), cur("curator-r", "read"), bat("baton-w", "write"), bat("baton-r", "read"))
	})
}

// TestCuratorAndBatonSemaphore checks `baton run --shared 2 NAME` against
// Curator's InterProcessSemaphoreV2("/NAME", 2): the two clients share one
// pool of two permits. With both permits held by one client, the other
// queues (its lease entry visible) and enters as soon as one is returned;
// under contention of two Java and two baton holders at most two are ever
// inside, and two are.
func TestCuratorAndBatonSemaphore(t *testing.T) { curatorSemaphore(t, plainZK) }

// TestCuratorAndBatonSemaphoreTLS runs the same on the TLS server with
// digest authentication and ACLs.
func TestCuratorAndBatonSemaphoreTLS(t *testing.T) { curatorSemaphore(t, tlsZK) }

func curatorSemaphore(t *testing.T, deploy func(*testing.T) zkDeploy) {
	needBaton(t)
	zd := deploy(t)
	cur := curatorSides(t, zd)
	const n = 2
	recipe := "semaphore:2"
	zs := zkServer(t, zd)
	srv := zs.recipe(curatorLease, "leases", n)
	// Curator's acquirer holds the guard mutex NAME/locks while it waits
	// for a permit, so only it watches the leases; a waiter of either
	// client must hold it the same way, or a Java and a Go acquirer could
	// count the leases at the same time and both take the last permit.
	acls := srv.waiting
	srv.waiting = func(t *testing.T, name string) {
		t.Helper()
		acls(t, name)
		g := zs.queue(t, name+"/locks")
		if len(g) != 1 || !curatorEntry.MatchString(g[0]) {
			t.Errorf("guard %q while a waiter is queued = %q, want one entry matching %v (the waiter's)", "/"+name+"/locks", g, curatorEntry)
		}
	}
	bat := func(who string) side { return zd.baton(who, recipe) }

	t.Run("CuratorHoldsBoth", func(t *testing.T) {
		v := queued(t, srv, []side{cur("curator-1", recipe), cur("curator-2", recipe)}, bat("baton"), 1)
		if v.mixedPeak != n {
			t.Errorf("at most %d permit holders of both clients were inside at once, want %d", v.mixedPeak, n)
		}
	})
	t.Run("BatonHoldsBoth", func(t *testing.T) {
		v := queued(t, srv, []side{bat("baton-1"), bat("baton-2")}, cur("curator", recipe), 1)
		if v.mixedPeak != n {
			t.Errorf("at most %d permit holders of both clients were inside at once, want %d", v.mixedPeak, n)
		}
	})
	t.Run("Interleaved", func(t *testing.T) {
		v := interleaved(t, srv, 3, "0.2",
			cur("curator-1", recipe), cur("curator-2", recipe), bat("baton-1"), bat("baton-2"))
		// The checker already fails on more than n; fewer would mean the
		// holders never contended for the pool.
		if v.peak != n {
			t.Errorf("at most %d permit holders were inside at once, want %d", v.peak, n)
		}
	})
}

// TestCuratorAndBatonLeader checks `baton elect NAME` against Curator's
// LeaderLatch("/NAME"): one leader at a time across the two clients, in
// both start orders, and leadership passes to the other client's
// candidate when the leader exits.
func TestCuratorAndBatonLeader(t *testing.T) { curatorLeader(t, plainZK) }

// TestCuratorAndBatonLeaderTLS runs the same on the TLS server with digest
// authentication and ACLs.
func TestCuratorAndBatonLeaderTLS(t *testing.T) { curatorLeader(t, tlsZK) }

func curatorLeader(t *testing.T, deploy func(*testing.T) zkDeploy) {
	needBaton(t)
	zd := deploy(t)
	cur := curatorSides(t, zd)
	srv := zkServer(t, zd).recipe(curatorLatch, "", 0)
	bat := func(who string) side { return zd.baton(who, "leader") }

	t.Run("CuratorFirst", func(t *testing.T) {
		ordered(t, srv, cur("curator", "leader"), bat("baton"))
	})
	t.Run("BatonFirst", func(t *testing.T) {
		ordered(t, srv, bat("baton"), cur("curator", "leader"))
	})
	t.Run("Interleaved", func(t *testing.T) {
		interleaved(t, srv, 3, "0.05",
			cur("curator-1", "leader"), cur("curator-2", "leader"), bat("baton-1"), bat("baton-2"))
	})
}
