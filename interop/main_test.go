package interop_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

var (
	// batonBin is the baton binary TestMain built, batonBuildErr why it
	// could not be built.
	batonBin      string
	batonBuildErr error
	// criticalSh is the absolute path of testdata/critical.sh.
	criticalSh string
	// scratch is a directory that lives as long as the test binary, for
	// what several tests share (the compiled Java classes).
	scratch string
)

// TestMain builds cmd/baton once for every test: the interop tests run the
// real CLI as an operator would, not the library behind it.
func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	tmp, err := os.MkdirTemp("", "baton-interop-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "interop:", err)
		return 1
	}
	defer os.RemoveAll(tmp)
	scratch = tmp
	batonBin = filepath.Join(tmp, "baton")
	// Built without -race even under go test -race: a race-enabled binary
	// takes about a second to start on this machine, which would stretch
	// the loops and thin out the contention these tests are for. The CLI's
	// own tests run it under the race detector.
	args := []string{"build", "-o", batonBin, "github.com/baton-go/baton/cmd/baton"}
	// go test puts GOROOT/bin first on the test binary's PATH.
	if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
		batonBuildErr = fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	criticalSh, err = filepath.Abs(filepath.Join("testdata", "critical.sh"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "interop:", err)
		return 1
	}
	return m.Run()
}

// needBaton fails the test when cmd/baton did not build: a tree whose CLI
// does not build is broken, by hand as under CI.
func needBaton(t *testing.T) {
	t.Helper()
	if batonBuildErr != nil {
		t.Fatalf("baton binary: %v", batonBuildErr)
	}
}

// batonArgv returns the argv of the baton command that takes recipe on
// name and runs the critical section as who with the grant's kind:
//
//	mutex        baton run NAME            kind mutex
//	read         baton run --read NAME     kind read
//	write        baton run --write NAME    kind write
//	semaphore:N  baton run --shared N NAME kind permit
//	leader       baton elect NAME          kind leader
//
// The recipes are the ones java/CuratorRecipes.java names the same way.
func batonArgv(backend, recipe, name, dir, who, hold string) []string {
	cmd, flags := "run", []string(nil)
	switch {
	case recipe == "read" || recipe == "write":
		flags = []string{"--" + recipe}
	case strings.HasPrefix(recipe, "semaphore:"):
		flags = []string{"--shared", strings.TrimPrefix(recipe, "semaphore:")}
	case recipe == "leader":
		cmd = "elect"
	}
	argv := append([]string{batonBin, cmd, "--backend", backend}, flags...)
	return append(argv, name, "--", "sh", criticalSh, dir, who, hold, kindOf(recipe))
}

// kindOf is the kind a holder of recipe logs (see testdata/critical.sh).
func kindOf(recipe string) string {
	switch {
	case strings.HasPrefix(recipe, "semaphore:"):
		return "permit"
	case recipe == "read", recipe == "write", recipe == "leader":
		return recipe
	}
	return "mutex"
}

// loop returns an argv that runs argv n times in a row and stops at the
// first failure with its status.
func loop(n int, argv ...string) []string {
	script := `n=$1; shift; i=0; while [ "$i" -lt "$n" ]; do "$@" || exit $?; i=$((i + 1)); done`
	return append([]string{"sh", "-c", script, "loop", strconv.Itoa(n)}, argv...)
}

// lockName returns a lock name no earlier run has used, below a shared
// parent so container parents are exercised too.
func lockName(t *testing.T) string {
	s := strings.ToLower(strings.NewReplacer("/", "-", " ", "-").Replace(t.Name()))
	return fmt.Sprintf("baton-interop/%s-%d", s, time.Now().UnixNano())
}

// proc is a child process of the test with its combined output.
type proc struct {
	name string
	cmd  *exec.Cmd
	out  bytes.Buffer // written by exec's copier; read only after done
	done chan struct{}
	err  error // Wait's result, set before done is closed
}

// start runs argv in its own process group. A cleanup kills the group if
// the process is still running when the test ends; WaitDelay bounds the
// wait for grandchildren that still hold the output pipe.
func start(t *testing.T, name string, env []string, argv ...string) *proc {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	p := &proc{name: name, cmd: cmd, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = &p.out, &p.out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = 2 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s (%s): %v", name, strings.Join(argv, " "), err)
	}
	// The waiter ends when the process does; the cleanup below makes sure
	// it does.
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-p.done
		}
	})
	return p
}

// exited reports whether p has ended.
func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// succeed waits up to d for p and reports an error unless it exited 0.
func (p *proc) succeed(t *testing.T, d time.Duration) {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(d):
		t.Fatalf("%s still running after %v", p.name, d)
	}
	if p.err != nil {
		t.Errorf("%s = %v, want exit status 0; output:\n%s", p.name, p.err, p.out.String())
	}
}

// waitUntil polls cond until it holds, failing the test after timeout or
// as soon as one of procs ends (it would never make cond true).
func waitUntil(t *testing.T, what string, timeout time.Duration, cond func() bool, procs ...*proc) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		for _, p := range procs {
			if p.exited() {
				t.Fatalf("%s exited (%v) while waiting for %s; output:\n%s", p.name, p.err, what, p.out.String())
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s after %v", what, timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// touch creates an empty file: a gate the holders poll for.
func touch(t *testing.T, path string) {
	t.Helper()
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

// readLog returns the shared log ("" before the first line).
func readLog(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "log"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return string(b)
}

// entered reports whether who has logged an enter line.
func entered(t *testing.T, dir, who string) bool {
	t.Helper()
	for _, line := range strings.Split(readLog(t, dir), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "enter" && f[1] == who {
			return true
		}
	}
	return false
}

// exists reports whether path exists.
func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
