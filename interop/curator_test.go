package interop_test

import (
	"errors"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/baton-go/baton/internal/testenv"
	"github.com/go-zookeeper/zk"
)

// javaLib is where Debian installs Java libraries.
const javaLib = "/usr/share/java"

// curatorJars are the jars CuratorMutex needs to compile and run, by their
// Debian names: libcurator-recipes-java and what it depends on
// (libzookeeper-java, libguava-java, libslf4j-java). The ZooKeeper client
// talks NIO by default, so no netty jar is needed.
var curatorJars = []string{
	"curator-client", "curator-framework", "curator-recipes",
	"zookeeper", "zookeeper-jute", "guava", "slf4j-api",
}

// quietJar binds slf4j to no-op logging, silencing its "no binding"
// warning; optional.
const quietJar = "slf4j-nop"

// curatorEntry is Curator 5's InterProcessMutex entry: protected-create
// prefix, the "lock-" marker, a 10-digit sequence. baton's entries must
// look the same or the two would not see each other's.
var curatorEntry = regexp.MustCompile(`^_c_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-lock-[0-9]{10}$`)

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

// curator compiles java/CuratorMutex.java into a temp dir against
// Debian's jars and returns a function giving the argv of one run. A
// missing JDK or jar skips by hand and fails under CI=true.
func curator(t *testing.T, zkAddr string) func(path, dir, who, hold string, n int) []string {
	t.Helper()
	javac := testenv.Binary(t, "javac")
	java := testenv.Binary(t, "java")
	var jars, missing []string
	for _, name := range curatorJars {
		if p, ok := findJar(name); ok {
			jars = append(jars, p)
		} else {
			missing = append(missing, name+".jar")
		}
	}
	if len(missing) > 0 {
		msg := "Curator interop needs " + strings.Join(missing, ", ") + " in " + javaLib +
			" (apt-get install libcurator-recipes-java; scripts/test.sh does)"
		if testenv.CI() {
			t.Fatal(msg + " — fails under CI=true")
		}
		t.Skip(msg)
	}
	if p, ok := findJar(quietJar); ok {
		jars = append(jars, p)
	}
	classes := t.TempDir()
	src, err := filepath.Abs(filepath.Join("java", "CuratorMutex.java"))
	if err != nil {
		t.Fatal(err)
	}
	cp := strings.Join(jars, ":")
	if out, err := exec.Command(javac, "-d", classes, "-cp", cp, src).CombinedOutput(); err != nil {
		t.Fatalf("javac CuratorMutex.java against %s: %v\n%s", cp, err, out)
	}
	cp = classes + ":" + cp
	return func(path, dir, who, hold string, n int) []string {
		// A small serial heap and the C1 compiler start a JVM fastest on
		// the two shared cores.
		return []string{java, "-Xmx64m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
			"-cp", cp, "CuratorMutex", zkAddr, path, dir, who, hold, strconv.Itoa(n)}
	}
}

// zkServer connects a plain go-zookeeper client to inspect the lock
// directory from outside both clients.
func zkServer(t *testing.T, addr string) server {
	t.Helper()
	conn, _, err := zk.Connect([]string{addr}, 5*time.Second, zk.WithLogger(quiet{}))
	if err != nil {
		t.Fatalf("zk.Connect(%q) = %v", addr, err)
	}
	t.Cleanup(conn.Close)
	return server{
		engine:  "zk",
		backend: "zk://" + addr,
		entry:   curatorEntry,
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
func TestCuratorAndBatonMutex(t *testing.T) {
	needBaton(t)
	addr := testenv.ZK(t)
	cur := curator(t, addr)
	srv := zkServer(t, addr)
	curatorSide := func(who string) side {
		return side{who: who, gated: true, argv: func(name, dir, who, hold string, n int) []string {
			return cur("/"+name, dir, who, hold, n)
		}}
	}

	t.Run("CuratorFirst", func(t *testing.T) {
		ordered(t, srv, curatorSide("curator"), batonSide(srv.backend, "baton"))
	})
	t.Run("BatonFirst", func(t *testing.T) {
		ordered(t, srv, batonSide(srv.backend, "baton"), curatorSide("curator"))
	})
	t.Run("Interleaved", func(t *testing.T) {
		interleaved(t, srv, 5,
			curatorSide("curator-1"), curatorSide("curator-2"),
			batonSide(srv.backend, "baton-1"), batonSide(srv.backend, "baton-2"))
	})
}
