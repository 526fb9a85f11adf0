package demo

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/cmd/baton/internal/cli"
	"github.com/baton-go/baton/etcdlock"
	"github.com/baton-go/baton/fence"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// demoClient is one in-process lock client (B or C) with its own etcd
// connection and lease.
type demoClient struct {
	cli *clientv3.Client
	lc  *baton.Client
	raw *etcdlock.Client // lc's engine client: its raw keys
}

type lockResult struct {
	lease *baton.Lease
	err   error
}

func newDemoClient(endpoint string) (*demoClient, error) {
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return nil, err
	}
	lc, err := etcdlock.New(cli, etcdlock.Options{TTL: demoTTL})
	if err != nil {
		cli.Close()
		return nil, err
	}
	raw, _ := baton.As[*etcdlock.Client](lc)
	return &demoClient{cli: cli, lc: lc, raw: raw}, nil
}

func (d *demoClient) close() {
	_ = d.lc.Close()
	_ = d.cli.Close()
}

// lockAsync starts Lock in a goroutine that ends when Lock returns (ctx
// bounds it); the result arrives on the returned channel.
func (d *demoClient) lockAsync(ctx context.Context) <-chan lockResult {
	out := make(chan lockResult, 1)
	m, err := d.lc.Mutex(demoLock)
	if err != nil {
		out <- lockResult{err: err}
		return out
	}
	go func() {
		l, err := m.Lock(ctx)
		out <- lockResult{lease: l, err: err}
	}()
	return out
}

// awaitEntries waits until the lock's queue has n entries.
func (d *demoClient) awaitEntries(ctx context.Context, n int) error {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		keys, err := d.raw.Entries(ctx, demoLock)
		if err != nil {
			return err
		}
		if len(keys) >= n {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// holderProc is holder A: the baton binary re-executed as HolderCmd.
// It reports on fd 3 as lines "<what> <fields…>" and takes commands on
// its stdin.
type holderProc struct {
	cmd     *exec.Cmd
	in      io.WriteCloser
	lines   chan []string
	waitErr chan error
}

func startHolder(ctx context.Context, env *cli.Env, endpoint, dbPath string) (*holderProc, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self, HolderCmd, endpoint, dbPath)
	cmd.Stderr = env.Stderr
	cmd.ExtraFiles = []*os.File{pw}
	// A dies with the demo, whatever happens to the demo.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	in, err := cmd.StdinPipe()
	if err != nil {
		pr.Close()
		pw.Close()
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		pr.Close()
		pw.Close()
		return nil, fmt.Errorf("start holder A: %w", err)
	}
	pw.Close()
	h := &holderProc{cmd: cmd, in: in, lines: make(chan []string, 16), waitErr: make(chan error, 1)}
	// The reader ends at EOF, when A exits (or is killed by stop).
	go func() {
		defer close(h.lines)
		defer pr.Close()
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			h.lines <- strings.Fields(sc.Text())
		}
	}()
	return h, nil
}

// expect returns the fields after what of A's next report.
func (h *holderProc) expect(ctx context.Context, what string) ([]string, error) {
	select {
	case f, ok := <-h.lines:
		if !ok {
			return nil, fmt.Errorf("holder A exited before reporting %q", what)
		}
		if len(f) < 2 || f[0] != what {
			return nil, fmt.Errorf("holder A reported %q, want %q", strings.Join(f, " "), what)
		}
		return f[1:], nil
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for holder A to report %q: %w", what, ctx.Err())
	}
}

func (h *holderProc) send(cmd string) error {
	_, err := io.WriteString(h.in, cmd+"\n")
	return err
}

// wait reaps A after it finished its part.
func (h *holderProc) wait(ctx context.Context) error {
	h.in.Close()
	done := make(chan error, 1)
	go func() { done <- h.cmd.Wait() }()
	select {
	case err := <-done:
		h.cmd = nil
		return err
	case <-ctx.Done():
		_ = h.cmd.Process.Kill()
		<-done
		h.cmd = nil
		return ctx.Err()
	}
}

// stop kills A if it is still there (an aborted demo).
func (h *holderProc) stop() {
	if h.cmd == nil {
		return
	}
	_ = h.cmd.Process.Signal(syscall.SIGCONT)
	_ = h.cmd.Process.Kill()
	_ = h.cmd.Wait()
	h.cmd = nil
}

// HolderMain is holder A's side: acquire, read, wait for "write", do
// the late write on both stores, report the lease's state.
func HolderMain(env *cli.Env, args []string) int {
	if len(args) != 2 {
		return env.Fail(cli.Usagef("%s is internal to baton demo", HolderCmd))
	}
	report := os.NewFile(3, "report")
	if report == nil {
		return env.Fail(cli.Usagef("%s is internal to baton demo", HolderCmd))
	}
	if err := holder(env, args[0], args[1], report); err != nil {
		fmt.Fprintf(env.Stderr, "demo: holder A: %v\n", err)
		return cli.ExitDemoFailed
	}
	return cli.ExitOK
}

func holder(env *cli.Env, endpoint, dbPath string, report io.Writer) error {
	ctx, cancel := context.WithTimeout(context.Background(), demoBudget)
	defer cancel()
	tell := func(format string, args ...any) { fmt.Fprintf(report, format+"\n", args...) }

	dc, err := newDemoClient(endpoint)
	if err != nil {
		return err
	}
	defer dc.close()
	db, err := openDemoDB(dbPath)
	if err != nil {
		return err
	}
	defer db.Close()
	m, err := dc.lc.Mutex(demoLock)
	if err != nil {
		return err
	}
	l, err := m.Lock(ctx)
	if err != nil {
		return err
	}
	tell("held %d", l.Token())
	ledgers := demoLedgers()
	var bal [2]int
	for i, lg := range ledgers {
		if bal[i], err = lg.balance(ctx, db); err != nil {
			return err
		}
	}
	tell("read %d %d", bal[0], bal[1])

	// Here the demo pauses this process. The write below was decided
	// before the pause, as a real handler decides its write before a GC
	// pause or a page fault stalls it: nothing in between checks
	// the lock, and no check could close the gap anyway.
	cmd, err := bufio.NewReader(env.Stdin).ReadString('\n')
	if err != nil || strings.TrimSpace(cmd) != "write" {
		return fmt.Errorf("want the command write, got %q (%v)", cmd, err)
	}
	for i, lg := range ledgers {
		lateWrite(ctx, env, tell, lg, db, l, [2]string{"fenced", "unfenced"}[i], bal[i]-30)
	}
	// The lease's own deadline already passed during the pause; give the
	// engine a moment to notice now that the process runs again.
	select {
	case <-l.Done():
	case <-time.After(3 * demoTTL):
	}
	tell("state %s", l.State())
	if err := l.Release(context.Background()); err != nil && !errors.Is(err, baton.ErrLost) {
		return err
	}
	return nil
}

// lateWrite is A's write of balance to the store of lg (name), made with
// the token of the lease l it lost during its pause, and told as
// "write <store> <outcome> [stored token and owner]".
func lateWrite(ctx context.Context, env *cli.Env, tell func(string, ...any), lg ledger, db *sql.DB, l *baton.Lease, name string, balance int) {
	err := lg.set(ctx, db, l.Token(), l.Owner(), "A", balance)
	var stale *fence.StaleError
	switch {
	case err == nil:
		tell("write %s accepted", name)
	case errors.As(err, &stale):
		tell("write %s rejected %d %s", name, stale.StoredToken, stale.StoredOwner)
	case errors.Is(err, baton.ErrStaleToken):
		tell("write %s rejected 0", name)
	default:
		tell("write %s error", name)
		fmt.Fprintf(env.Stderr, "demo: holder A: write to the %s store: %v\n", name, err)
	}
}
