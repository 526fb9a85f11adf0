package main

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/cmd/baton/internal/cli"
	"github.com/baton-go/baton/cmd/baton/internal/embedetcd"
	"github.com/baton-go/baton/etcdlock"
	"github.com/baton-go/baton/fence"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	_ "modernc.org/sqlite"
)

// The demo's settings. The TTL is short so the story fits in seconds; the
// budget bounds the whole run even if a step hangs.
const (
	demoTTL     = 2 * time.Second
	demoBudget  = 50 * time.Second
	demoLock    = "demo/account-42"
	demoAccount = "account-42"
	// demoHolderCmd is the hidden subcommand the demo re-executes itself
	// with to run holder A in a process of its own, which the demo can
	// really pause with SIGSTOP.
	demoHolderCmd = "__demo-holder"
	// sqliteDSN: WAL and a busy timeout so two processes share the file;
	// _txlock=immediate so a fenced transaction takes the write lock at
	// BEGIN (as package fence asks).
	sqliteDSN = "?_pragma=busy_timeout(5000)&_pragma=journal_mode(wal)&_txlock=immediate"
)

// ledger is one twin of the resource: an account balance guarded by a
// fence (Table) or by nothing (Unfenced).
type ledger struct {
	label string
	table string // business table
	fence interface {
		fence.Fence
		Migrate(context.Context, fence.Querier) error
		Write(ctx context.Context, db *sql.DB, resource string, token uint64, owner string, fn func(*sql.Tx) error) error
	}
}

func demoLedgers() [2]ledger {
	return [2]ledger{
		{label: "fenced", table: "ledger", fence: fence.Table{Name: "fencing_tokens", Dialect: fence.SQLite}},
		{label: "unfenced twin", table: "ledger_unfenced", fence: fence.Unfenced{Table: fence.Table{Name: "unfenced_tokens", Dialect: fence.SQLite}}},
	}
}

func openDemoDB(path string) (*sql.DB, error) {
	return sql.Open("sqlite", "file:"+path+sqliteDSN)
}

func (l ledger) balance(ctx context.Context, db *sql.DB) (int, error) {
	var b int
	err := db.QueryRowContext(ctx, "SELECT balance FROM "+l.table+" WHERE account = ?", demoAccount).Scan(&b)
	return b, err
}

// set writes a new balance under token: through the fence, in one
// transaction with the fence's advance.
func (l ledger) set(ctx context.Context, db *sql.DB, token uint64, owner, who string, balance int) error {
	return l.fence.Write(ctx, db, demoAccount, token, owner, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, "UPDATE "+l.table+" SET balance = ?, writer = ? WHERE account = ?", balance, who, demoAccount)
		return err
	})
}

// say narrates one step of the demo on stderr.
func say(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "demo: "+format+"\n", args...)
}

// demoMain is `baton demo`. It is a check, not a script of prints: every
// step's outcome is verified, and it exits non-zero when the story did not
// happen as it must.
func demoMain() int {
	sctx, stop := signal.NotifyContext(context.Background(), cli.Signals...)
	defer stop()
	ctx, cancel := context.WithTimeout(sctx, demoBudget)
	defer cancel()
	begin := time.Now()
	if err := demo(ctx); err != nil {
		if s, ok := cli.SignalFromCause(sctx); ok {
			say("interrupted by %v", s)
			return cli.ExitSignalBase + int(s)
		}
		say("FAILED after %v: %v", time.Since(begin).Round(time.Millisecond), err)
		return cli.ExitDemoFailed
	}
	return cli.ExitOK
}

// demoStory collects what happened, to check and tell at the end.
type demoStory struct {
	tokenA, tokenB, tokenC uint64
	aSawLost               bool
	fencedRejected         bool
	fencedStored           uint64
	unfencedAccepted       bool
}

// demoRun is one run of the story: the server, the twin stores and the
// three clients, with what has happened so far. Each step is a method
// that fits on a screen; demo runs them in order.
type demoRun struct {
	ctx        context.Context
	endpoint   string // the embedded etcd
	dbPath     string
	db         *sql.DB
	a          *holderProc // holder A, a process of its own
	b, c       *demoClient // B and C, in this process
	gotB, gotC <-chan lockResult
	leaseB     *baton.Lease
	paused     time.Time // when A was frozen
	balances   [2]int    // what C reads: fenced, unfenced
	st         demoStory
}

func demo(ctx context.Context) error {
	say("starting an embedded etcd server on a free loopback port")
	srv, err := embedetcd.Start()
	if err != nil {
		return fmt.Errorf("embedded etcd: %w", err)
	}
	defer srv.Close()
	dir, err := os.MkdirTemp("", "baton-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	r := &demoRun{ctx: ctx, endpoint: srv.Endpoint, dbPath: filepath.Join(dir, "bank.db")}
	if r.db, err = openDemoStores(ctx, r.dbPath); err != nil {
		return err
	}
	defer r.db.Close()
	say("etcd at %s; lock %q (lease TTL %v); %s holds balance 100 in two twin SQLite stores: one fenced, one not",
		srv.Endpoint, demoLock, demoTTL, demoAccount)
	defer r.close()
	for _, step := range []func() error{r.startA, r.queueBehindA, r.pauseA, r.resumeA, r.handOverToC} {
		if err := step(); err != nil {
			return err
		}
	}
	return r.verdict()
}

// openDemoStores creates the twin stores in a fresh SQLite file: each
// ledger's fence table and its account row at balance 100.
func openDemoStores(ctx context.Context, path string) (*sql.DB, error) {
	db, err := openDemoDB(path)
	if err != nil {
		return nil, err
	}
	for _, l := range demoLedgers() {
		err := l.fence.Migrate(ctx, db)
		if err == nil {
			_, err = db.ExecContext(ctx, "CREATE TABLE "+l.table+" (account TEXT PRIMARY KEY, balance INTEGER NOT NULL, writer TEXT NOT NULL)")
		}
		if err == nil {
			_, err = db.ExecContext(ctx, "INSERT INTO "+l.table+" VALUES (?, 100, 'setup')", demoAccount)
		}
		if err != nil {
			db.Close()
			return nil, err
		}
	}
	return db, nil
}

// close stops A and closes B's and C's clients, whichever were started.
func (r *demoRun) close() {
	if r.c != nil {
		r.c.close()
	}
	if r.b != nil {
		r.b.close()
	}
	if r.a != nil {
		r.a.stop()
	}
}

// startA starts holder A in a process of its own, so that it can really
// be paused, and waits until it holds the lock and has read the balance.
func (r *demoRun) startA() error {
	a, err := startHolder(r.ctx, r.endpoint, r.dbPath)
	if err != nil {
		return err
	}
	r.a = a
	line, err := a.expect(r.ctx, "held")
	if err != nil {
		return err
	}
	if r.st.tokenA, err = strconv.ParseUint(line[0], 10, 64); err != nil {
		return fmt.Errorf("A's token %q: %w", line[0], err)
	}
	say("A (pid %d) is granted the lock with token %d", a.cmd.Process.Pid, r.st.tokenA)
	if _, err := a.expect(r.ctx, "read"); err != nil {
		return err
	}
	say("A reads balance 100 and prepares its write: withdraw 30, so balance := 70")
	return nil
}

// queueBehindA starts B's and then C's Lock, each once the previous
// waiter's entry is in the queue, so that they are served in that order.
func (r *demoRun) queueBehindA() error {
	var err error
	if r.b, err = newDemoClient(r.endpoint); err != nil {
		return err
	}
	if r.c, err = newDemoClient(r.endpoint); err != nil {
		return err
	}
	r.gotB = r.b.lockAsync(r.ctx)
	if err := r.b.awaitEntries(r.ctx, 2); err != nil {
		return fmt.Errorf("B did not queue: %w", err)
	}
	say("B queues behind A")
	r.gotC = r.c.lockAsync(r.ctx)
	if err := r.c.awaitEntries(r.ctx, 3); err != nil {
		return fmt.Errorf("C did not queue: %w", err)
	}
	say("C queues behind B")
	return nil
}

// pauseA freezes A until its lease expires and B is granted, and lets B
// write its deposit to both stores.
func (r *demoRun) pauseA() error {
	if err := r.a.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		return fmt.Errorf("pause A: %w", err)
	}
	r.paused = time.Now()
	say("A freezes before it writes (SIGSTOP, like a long GC or VM pause); its lease can no longer be kept alive")
	var err error
	if r.leaseB, err = awaitGrant(r.ctx, r.gotB, "B"); err != nil {
		return err
	}
	r.st.tokenB = r.leaseB.Token()
	say("%v later A's lease has expired on the server: B is granted the lock with token %d", time.Since(r.paused).Round(100*time.Millisecond), r.st.tokenB)
	if r.st.tokenB <= r.st.tokenA {
		return fmt.Errorf("B's token %d is not above A's %d", r.st.tokenB, r.st.tokenA)
	}
	for _, l := range demoLedgers() {
		bal, err := l.balance(r.ctx, r.db)
		if err != nil {
			return err
		}
		if err := l.set(r.ctx, r.db, r.leaseB.Token(), r.leaseB.Owner(), "B", bal+50); err != nil {
			return fmt.Errorf("B's write to the %s store: %w", l.label, err)
		}
	}
	say("B reads balance 100, deposits 50 and writes balance := 150 with token %d to both stores", r.st.tokenB)
	return nil
}

// awaitGrant waits for the Lock started by lockAsync of who.
func awaitGrant(ctx context.Context, got <-chan lockResult, who string) (*baton.Lease, error) {
	select {
	case res := <-got:
		if res.err != nil {
			return nil, fmt.Errorf("%s's Lock: %w", who, res.err)
		}
		return res.lease, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("%s was never granted: %w", who, ctx.Err())
	}
}

// resumeA wakes A, which sends the write it prepared before the pause
// to both stores, reports each store's answer and the state it was told.
func (r *demoRun) resumeA() error {
	if err := r.a.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		return fmt.Errorf("resume A: %w", err)
	}
	say("A resumes after %v paused and sends the write it had prepared: balance := 70 with token %d",
		time.Since(r.paused).Round(100*time.Millisecond), r.st.tokenA)
	if err := r.a.send("write"); err != nil {
		return err
	}
	for range 2 {
		line, err := r.a.expect(r.ctx, "write")
		if err != nil {
			return err
		}
		r.tellWrite(line)
	}
	line, err := r.a.expect(r.ctx, "state")
	if err != nil {
		return err
	}
	r.st.aSawLost = line[0] == baton.Lost.String()
	say("A is told its lease is %s", line[0])
	if err := r.a.wait(r.ctx); err != nil {
		return fmt.Errorf("holder A: %w", err)
	}
	return nil
}

// tellWrite records and tells one store's answer to A's late write:
// "<store> <outcome> [stored token]".
func (r *demoRun) tellWrite(line []string) {
	store, outcome := line[0], line[1]
	switch {
	case store == "fenced" && outcome == "rejected":
		r.st.fencedRejected = true
		if len(line) > 2 {
			r.st.fencedStored, _ = strconv.ParseUint(line[2], 10, 64)
		}
		say("the fenced store rejects A's write: token %d is older than the stored %d", r.st.tokenA, r.st.fencedStored)
	case store == "fenced":
		say("the fenced store ACCEPTED A's stale write (%s)", strings.Join(line[1:], " "))
	case store == "unfenced" && outcome == "accepted":
		r.st.unfencedAccepted = true
		say("the unfenced twin accepts A's write: balance 70 overwrites B's 150")
	default:
		say("the unfenced twin did not take A's write (%s)", strings.Join(line[1:], " "))
	}
}

// handOverToC releases B; C is granted, reads both stores and writes to
// the fenced one with its newer token.
func (r *demoRun) handOverToC() error {
	if err := r.leaseB.Release(r.ctx); err != nil {
		return fmt.Errorf("B's release: %w", err)
	}
	say("B releases")
	leaseC, err := awaitGrant(r.ctx, r.gotC, "C")
	if err != nil {
		return err
	}
	r.st.tokenC = leaseC.Token()
	for i, l := range demoLedgers() {
		if r.balances[i], err = l.balance(r.ctx, r.db); err != nil {
			return err
		}
	}
	if err := demoLedgers()[0].set(r.ctx, r.db, leaseC.Token(), leaseC.Owner(), "C", r.balances[0]); err != nil {
		return fmt.Errorf("C's write to the fenced store: %w", err)
	}
	say("C is granted the lock with token %d and reads: fenced balance %d, unfenced balance %d; its fenced write is accepted",
		r.st.tokenC, r.balances[0], r.balances[1])
	if err := leaseC.Release(r.ctx); err != nil {
		return fmt.Errorf("C's release: %w", err)
	}
	return nil
}

// verdict checks the story's outcome: increasing tokens, A told of its
// loss, the fenced store keeping B's update, the unfenced twin losing it.
func (r *demoRun) verdict() error {
	st, balances := r.st, r.balances
	var problems []string
	check := func(ok bool, what string) {
		if !ok {
			problems = append(problems, what)
		}
	}
	check(st.tokenA < st.tokenB && st.tokenB < st.tokenC, fmt.Sprintf("tokens not increasing: A %d, B %d, C %d", st.tokenA, st.tokenB, st.tokenC))
	check(st.aSawLost, "A was not told it lost the lock")
	check(st.fencedRejected, "the fenced store accepted A's late write")
	check(st.fencedStored == st.tokenB, fmt.Sprintf("the fenced store held token %d, not B's %d", st.fencedStored, st.tokenB))
	check(balances[0] == 150, fmt.Sprintf("fenced balance %d, want 150 (B's deposit kept)", balances[0]))
	check(st.unfencedAccepted && balances[1] == 70, fmt.Sprintf("the unfenced twin shows %d, want 70 (the control did not lose B's update)", balances[1]))
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	say("fenced resource rejected A's late write with token %d (stored %d from B); the unfenced twin accepted it and lost B's update",
		st.tokenA, st.tokenB)
	return nil
}

// demoClient is one in-process lock client (B or C) with its own etcd
// connection and lease.
type demoClient struct {
	cli *clientv3.Client
	lc  *etcdlock.Client
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
	return &demoClient{cli: cli, lc: lc}, nil
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
		keys, err := d.lc.Entries(ctx, demoLock)
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

// holderProc is holder A: the baton binary re-executed as demoHolderCmd.
// It reports on fd 3 as lines "<what> <fields…>" and takes commands on
// its stdin.
type holderProc struct {
	cmd     *exec.Cmd
	in      io.WriteCloser
	lines   chan []string
	waitErr chan error
}

func startHolder(ctx context.Context, endpoint, dbPath string) (*holderProc, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self, demoHolderCmd, endpoint, dbPath)
	cmd.Stderr = os.Stderr
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

// demoHolderMain is holder A's side: acquire, read, wait for "write", do
// the late write on both stores, report the lease's state.
func demoHolderMain(args []string) int {
	if len(args) != 2 {
		return fail(cli.Usagef("%s is internal to baton demo", demoHolderCmd))
	}
	report := os.NewFile(3, "report")
	if report == nil {
		return fail(cli.Usagef("%s is internal to baton demo", demoHolderCmd))
	}
	if err := holder(args[0], args[1], report); err != nil {
		fmt.Fprintf(os.Stderr, "demo: holder A: %v\n", err)
		return cli.ExitDemoFailed
	}
	return cli.ExitOK
}

func holder(endpoint, dbPath string, report io.Writer) error {
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
	cmd, err := bufio.NewReader(os.Stdin).ReadString('\n')
	if err != nil || strings.TrimSpace(cmd) != "write" {
		return fmt.Errorf("want the command write, got %q (%v)", cmd, err)
	}
	for i, lg := range ledgers {
		name := [2]string{"fenced", "unfenced"}[i]
		err := lg.set(ctx, db, l.Token(), l.Owner(), "A", bal[i]-30)
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
			fmt.Fprintf(os.Stderr, "demo: holder A: write to the %s store: %v\n", name, err)
		}
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
