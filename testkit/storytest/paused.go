package storytest

import (
	"bufio"
	"context"
	"database/sql"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/batontest/testenv"
	"github.com/baton-go/baton/faultproxy"
	"github.com/baton-go/baton/zklock"
)

// Paused is what the paused-holder story leaves its test to check.
type Paused struct {
	ChildToken uint64       // the token the child was granted
	Lease      *baton.Lease // the second client's, still held
	Out        string       // the file the child dumped its record to
}

// PausedHolder tells the paused-holder story on a real ZooKeeper, in two
// processes: the child holder (HolderMain, run by the test binary's
// TestMain) is cut off by a blackhole at a fault proxy, reports Suspended,
// and is SIGSTOPped past its session timeout; the parent, observed by o,
// is granted name with a larger token and makes a fenced write; the
// child, resumed, finds its lease lost and its late write refused, dumps
// its record to a file named out in a temporary folder, and exits.
//
// The child is cut off before it is stopped because a process stopped
// while healthy wakes long past the loss threshold, and its session
// watchdog then declares Lost at once: whether Suspended comes first
// would be a race with the connection's own timeout.
func PausedHolder(t *testing.T, name, out string, o baton.Observer) Paused {
	t.Helper()
	zk := testenv.ZK(t)
	proxy, err := faultproxy.Start(zk)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proxy.Close)
	dir := t.TempDir()
	dbPath, out := filepath.Join(dir, "fence.db"), filepath.Join(dir, out)
	tbl, db, err := OpenFence(t.Context(), dbPath, o)
	if err != nil {
		t.Fatalf("fence: %v", err)
	}
	t.Cleanup(func() { db.Close() })

	h := startHolder(t, proxy.Addr, name, dbPath, out)
	childToken, err := strconv.ParseUint(h.await(t, 30*time.Second, "granted"), 10, 64)
	if err != nil {
		t.Fatalf("holder's token: %v", err)
	}
	got := lockLater(t, zk, name, o)
	if err := proxy.Blackhole(""); err != nil {
		t.Fatalf("Blackhole: %v", err)
	}
	if st := h.await(t, 30*time.Second, "state"); st != baton.Suspended.String() {
		t.Fatalf("holder's first state after the blackhole: %s, want %s", st, baton.Suspended)
	}
	h.signal(t, syscall.SIGSTOP)
	stopped := time.Now()
	var r result
	select {
	case r = <-got:
	case <-time.After(30 * time.Second):
		h.signal(t, syscall.SIGCONT)
		t.Fatal("the second client was not granted while the holder was stopped")
	}
	if r.err != nil {
		h.signal(t, syscall.SIGCONT)
		t.Fatalf("second Lock = %v", r.err)
	}
	lb := r.l
	t.Logf("second client granted %v after the SIGSTOP, token %d (holder's %d)", time.Since(stopped).Round(time.Millisecond), lb.Token(), childToken)
	if lb.Token() <= childToken {
		t.Errorf("second token %d, want more than the holder's %d", lb.Token(), childToken)
	}
	if err := tbl.Write(lb.Context(), db, name, lb.Token(), lb.Owner(), func(*sql.Tx) error { return nil }); err != nil {
		t.Fatalf("second client's fenced write = %v", err)
	}
	h.signal(t, syscall.SIGCONT)
	if st := h.await(t, 30*time.Second, "state"); st != baton.Lost.String() {
		t.Errorf("holder's state after the SIGCONT: %s, want %s", st, baton.Lost)
	}
	h.await(t, 30*time.Second, "waiting")
	if _, err := io.WriteString(h.stdin, "write\n"); err != nil {
		t.Fatalf("go-ahead to the holder: %v", err)
	}
	t.Logf("holder's lease ended: %s", h.await(t, 30*time.Second, "lost"))
	h.await(t, 30*time.Second, "done")
	return Paused{ChildToken: childToken, Lease: lb, Out: out}
}

type result struct {
	l   *baton.Lease
	err error
}

// lockLater dials ZooKeeper at zk directly, observed by o, and starts a
// Lock of name that the held lock keeps waiting; its result comes on the
// channel.
func lockLater(t *testing.T, zk, name string, o baton.Observer) <-chan result {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	client, err := zklock.Dial(ctx, []string{zk}, zklock.Options{SessionTimeout: PausedTimeout, Observer: o})
	if err != nil {
		cancel()
		t.Fatalf("Dial: %v", err)
	}
	m, err := client.Mutex(name)
	if err != nil {
		cancel()
		client.Close()
		t.Fatal(err)
	}
	got := make(chan result, 1)
	go func() { // owner: this test; ends with ctx at the latest
		l, err := m.Lock(ctx)
		got <- result{l, err}
	}()
	t.Cleanup(func() {
		cancel()
		client.Close()
	})
	return got
}

// holder is the running child process.
type holder struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser // the go-ahead for its late write
	lines chan string    // its stdout, line by line; closed at EOF
}

func startHolder(t *testing.T, zk, name, dbPath, out string) *holder {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), envZK+"="+zk, envName+"="+name, envDB+"="+dbPath, envOut+"="+out)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start holder: %v", err)
	}
	h := &holder{cmd: cmd, stdin: stdin, lines: make(chan string, 16)}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // owner: the child; ends at its stdout's EOF
		defer wg.Done()
		defer close(h.lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			h.lines <- sc.Text()
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGCONT)
		_ = cmd.Process.Kill()
		for range h.lines {
		}
		wg.Wait()
		_ = cmd.Wait()
	})
	return h
}

// await returns the rest of the child's next line starting with word,
// skipping others.
func (h *holder) await(t *testing.T, d time.Duration, word string) string {
	t.Helper()
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		select {
		case line, ok := <-h.lines:
			if !ok {
				t.Fatalf("holder exited before %q", word)
			}
			if strings.HasPrefix(line, "error ") {
				t.Fatalf("holder: %s", line)
			}
			if rest, found := strings.CutPrefix(line, word); found {
				return strings.TrimSpace(rest)
			}
		case <-timer.C:
			t.Fatalf("holder: no %q after %v", word, d)
		}
	}
}

func (h *holder) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := h.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("signal %v: %v", sig, err)
	}
}
