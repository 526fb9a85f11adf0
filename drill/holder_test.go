package drill_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/baton-go/baton/drill"
	"github.com/baton-go/baton/drill/drilltest"
)

// The holder child process: the test binary re-executed with holderEnv set
// to the engine. It takes the lock, increments both counters, reads them
// once more, reports "ready" and blocks on stdin. On "go" it writes
// read+1 to both counters without looking at its lease — the write a
// process had already decided on when it was paused — then reports its
// lease's end. Its history goes to stdout as JSON lines, on the clock
// shared with the parent.
const (
	holderEnv      = "BATON_DRILL_HOLDER"
	holderEndpoint = "BATON_DRILL_HOLDER_ENDPOINT"
	holderName     = "BATON_DRILL_HOLDER_NAME"
	holderDB       = "BATON_DRILL_HOLDER_DB" // a counters spec (openResource)
	holderClient   = "BATON_DRILL_HOLDER_CLIENT"
	holderRes      = "BATON_DRILL_HOLDER_RES" // the counters' names: fenced,unfenced
)

func holderMain() int {
	rec := drill.NewRecorder(os.Stdout)
	client, name := os.Getenv(holderClient), os.Getenv(holderName)
	fail := func(what string, err error) int {
		rec.Info(client, "error", name, what+": "+err.Error())
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	lc, err := dialChild(ctx, os.Getenv(holderEnv), os.Getenv(holderEndpoint))
	if err != nil {
		return fail("dial", err)
	}
	defer lc.close()
	m, err := lc.mutex(name)
	if err != nil {
		return fail("mutex", err)
	}
	fName, uName, _ := strings.Cut(os.Getenv(holderRes), ",")
	res, db, err := openCounters(os.Getenv(holderDB), fName, uName)
	if err != nil {
		return fail("resource", err)
	}
	defer db.Close()
	fc, uc := res.fenced, res.unfenced

	op := rec.Begin(client, drill.OpAcquire, name, 0)
	l, err := m.Lock(ctx)
	if err != nil {
		op.Fail(err)
		return 2
	}
	op.End(drill.Ok, func(e *drill.Event) { e.Token, e.Entry = l.Token(), l.Owner() })
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Add(1)
	go func() { // owner: the lease; ends with it
		defer wg.Done()
		st, ch := l.Observe()
		for !st.Ended() {
			<-ch
			st, ch = l.Observe()
			rec.Record(drill.Event{Client: client, Op: drill.OpState, Phase: drill.Info, Name: name, Token: l.Token(), Detail: st.String()})
		}
	}()
	tok, owner := l.Token(), l.Owner()
	if err := fc.Increment(ctx, rec, client, tok, owner); err != nil {
		return fail("increment", err)
	}
	if err := uc.Increment(ctx, rec, client, tok, owner); err != nil {
		return fail("increment", err)
	}
	fv, ferr := fc.RecordedRead(ctx, rec, client, tok, owner)
	uv, uerr := uc.RecordedRead(ctx, rec, client, tok, owner)
	if ferr != nil || uerr != nil {
		return fail("read", errors.Join(ferr, uerr))
	}
	rec.Info(client, "ready", name, "")
	line, _ := bufio.NewReader(os.Stdin).ReadString('\n')
	if strings.TrimSpace(line) != "go" {
		return fail("stdin", fmt.Errorf("got %q", line))
	}
	_ = fc.RecordedWrite(ctx, rec, client, tok, owner, fv+1)
	_ = uc.RecordedWrite(ctx, rec, client, tok, owner, uv+1)
	select {
	case <-l.Done():
	case <-time.After(10 * time.Second):
	}
	rop := rec.Begin(client, drill.OpRelease, name, tok)
	if err := l.Release(ctx); err != nil {
		rop.Fail(err)
	} else {
		rop.Ok()
	}
	rec.Info(client, "exit", name, "")
	return 0
}

// child is a running holder process.
type child struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	done  chan struct{} // closed when its stdout ended

	mu     sync.Mutex
	seen   []drill.Event // every event of the child, as ingested
	notify chan struct{} // closed and replaced on every new event
}

// startHolder starts the holder child for e on name, working at res,
// ingesting its history into run's recorder.
func startHolder(t *testing.T, run *drilltest.Run, e *engine, id, name string, res *counters) *child {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), holderEnv+"="+e.name, holderEndpoint+"="+e.endpoint, holderName+"="+name,
		holderDB+"="+res.spec, holderRes+"="+res.fName+","+res.uName, holderClient+"="+id)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start holder: %v", err)
	}
	c := &child{cmd: cmd, stdin: stdin, done: make(chan struct{}), notify: make(chan struct{})}
	go func() { // owner: the child; ends at its stdout's EOF
		defer close(c.done)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			es, err := drill.ReadHistory(strings.NewReader(sc.Text()))
			if err != nil || len(es) != 1 {
				continue // not a history line (test framework output)
			}
			run.Rec.Ingest(es[0])
			c.mu.Lock()
			c.seen = append(c.seen, es[0])
			close(c.notify)
			c.notify = make(chan struct{})
			c.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGCONT)
		_ = cmd.Process.Kill()
		<-c.done
		_ = cmd.Wait()
	})
	return c
}

// await returns the child's first event (since it started) matching f,
// or fails after d.
func (c *child) await(t *testing.T, d time.Duration, what string, f func(drill.Event) bool) drill.Event {
	t.Helper()
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		c.mu.Lock()
		seen, notify := c.seen, c.notify
		c.mu.Unlock()
		for _, e := range seen {
			if e.Op == "error" {
				t.Fatalf("holder child: %s", e.Detail)
			}
			if f(e) {
				return e
			}
		}
		select {
		case <-notify:
		case <-c.done:
			select {
			case <-notify: // the last lines came with the EOF
				continue
			default:
			}
			t.Fatalf("holder child exited while waiting for %s", what)
		case <-timer.C:
			t.Fatalf("holder child: no %s after %v", what, d)
		}
	}
}

func (c *child) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := c.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("signal %v: %v", sig, err)
	}
}
