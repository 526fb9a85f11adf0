package scenario

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
	"sync/atomic"
	"syscall"
	"time"

	"github.com/baton-go/baton/drill"
)

// child is a running holder process (HolderMain), started by the parent.
// Its history arrives as JSON lines on its stdout and is merged into the
// trial's; the parent drives it with "go" on its stdin and with signals.
type child struct {
	id    string
	cmd   *exec.Cmd
	stdin io.WriteCloser
	done  chan struct{} // closed when its stdout ended

	frozen atomic.Bool // SIGSTOPped and not yet SIGCONTinued

	mu     sync.Mutex
	seen   []drill.Event // every event of the child, as ingested
	notify chan struct{} // closed and replaced on every new event
	stderr tail
}

// startChild starts a holder child of the trial as client id, dialing
// dial (nil: the servers themselves).
func (tr *trial) startChild(id string, dial []string) (*child, error) {
	cmd := tr.t.Holder(dial)
	if cmd == nil {
		return nil, errors.New("target's Holder returned no command")
	}
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	cmd.Env = append(cmd.Env,
		envHolder+"="+tr.spec.name,
		envName+"="+tr.name,
		envDB+"="+tr.dbPath,
		envRes+"="+tr.fenced.Name+","+tr.unfenced.Name,
		envClient+"="+id,
		envDial+"="+strings.Join(dial, ","),
		envTTL+"="+tr.t.TTL.String(),
	)
	c := &child{id: id, done: make(chan struct{}), notify: make(chan struct{})}
	if cmd.Stderr == nil {
		cmd.Stderr = &c.stderr
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start holder: %w", err)
	}
	c.cmd, c.stdin = cmd, stdin
	tr.mu.Lock()
	tr.children = append(tr.children, c)
	tr.mu.Unlock()
	go c.ingest(tr.rec, stdout) // owner: c; ends at its stdout's EOF, which stop waits for
	return c, nil
}

// ingest merges the child's history lines into rec until EOF. Other
// lines (a test framework's output) are skipped.
func (c *child) ingest(rec *drill.Recorder, stdout io.Reader) {
	defer close(c.done)
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		es, err := drill.ReadHistory(strings.NewReader(sc.Text()))
		if err != nil || len(es) != 1 {
			continue
		}
		rec.Ingest(es[0])
		c.mu.Lock()
		c.seen = append(c.seen, es[0])
		close(c.notify)
		c.notify = make(chan struct{})
		c.mu.Unlock()
	}
}

// await returns the child's first event matching f, or an error when the
// child failed, exited, d passed or ctx ended first.
func (c *child) await(ctx context.Context, d time.Duration, what string, f func(drill.Event) bool) (drill.Event, error) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		c.mu.Lock()
		seen, notify := c.seen, c.notify
		c.mu.Unlock()
		for _, e := range seen {
			if e.Op == opError {
				return e, fmt.Errorf("holder %s: %s", c.id, e.Detail)
			}
			if f(e) {
				return e, nil
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
			return drill.Event{}, fmt.Errorf("holder %s exited while the drill waited for its %s%s", c.id, what, c.stderr.text())
		case <-timer.C:
			return drill.Event{}, fmt.Errorf("holder %s: no %s after %v", c.id, what, d)
		case <-ctx.Done():
			return drill.Event{}, ctx.Err()
		}
	}
}

// tell writes a line to the child's stdin.
func (c *child) tell(line string) error {
	_, err := io.WriteString(c.stdin, line+"\n")
	return err
}

func (c *child) signal(sig syscall.Signal) error {
	switch sig {
	case syscall.SIGSTOP:
		c.frozen.Store(true)
	case syscall.SIGCONT:
		c.frozen.Store(false)
	}
	return c.cmd.Process.Signal(sig)
}

// stopGrace is how long a child told to stop (its stdin closed) gets to
// release its lease and exit before it is killed.
const stopGrace = time.Second

// stop ends the child: its stdin is closed (a running child releases
// and exits), then it is thawed and killed if it has not exited within
// stopGrace — at once when it is frozen, as it cannot act on its stdin.
// It returns when the process is reaped.
func (c *child) stop() {
	_ = c.stdin.Close()
	grace := stopGrace
	if c.frozen.Load() {
		grace = 0
	}
	select {
	case <-c.done:
	case <-time.After(grace):
		_ = c.cmd.Process.Signal(syscall.SIGCONT)
		_ = c.cmd.Process.Kill()
		<-c.done
	}
	_ = c.cmd.Wait()
}

// tail keeps the last few KiB written to it: a child's stderr, shown when
// it fails.
type tail struct {
	mu  sync.Mutex
	buf []byte
}

const tailMax = 4 << 10

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > tailMax {
		t.buf = t.buf[len(t.buf)-tailMax:]
	}
	return len(p), nil
}

func (t *tail) text() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s := strings.TrimSpace(string(t.buf)); s != "" {
		return "; stderr: " + s
	}
	return ""
}
