// Package demo is `baton demo`: the paused-holder story on an embedded
// etcd, checked step by step.
package demo

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/cmd/baton/internal/cli"
	"github.com/baton-go/baton/cmd/baton/internal/embedetcd"
)

// The demo's settings. The TTL is short so the story fits in seconds; the
// budget bounds the whole run even if a step hangs.
const (
	demoTTL     = 2 * time.Second
	demoBudget  = 50 * time.Second
	demoLock    = "demo/account-42"
	demoAccount = "account-42"
	// HolderCmd is the hidden subcommand the demo re-executes itself
	// with to run holder A in a process of its own, which the demo can
	// really pause with SIGSTOP.
	HolderCmd = "__demo-holder"
	// sqliteDSN: WAL and a busy timeout so two processes share the file;
	// _txlock=immediate so a fenced transaction takes the write lock at
	// BEGIN (as package fence asks).
	sqliteDSN = "?_pragma=busy_timeout(5000)&_pragma=journal_mode(wal)&_txlock=immediate"
)

// Usage is the help of `baton demo`.
const Usage = `Usage: baton demo

Starts an embedded etcd on free loopback ports and plays the story of the
paused lock holder: A, B and C queue on one lock (TTL 2s); A is stopped
(SIGSTOP) past its lease; B is granted with a higher token and writes; A
resumes, learns it lost the lock, and its late write is rejected by the
fenced store while an unfenced twin accepts it and loses B's update; C is
granted last. Exits 0 when the story happened as it must, 1 when it did not.
`

// teller narrates the demo's steps on w (stderr).
type teller struct{ w io.Writer }

func (t teller) say(format string, args ...any) {
	fmt.Fprintf(t.w, "demo: "+format+"\n", args...)
}

// Main is `baton demo`. It is a check, not a script of prints: every
// step's outcome is verified, and it exits non-zero when the story did not
// happen as it must.
func Main(env *cli.Env) int {
	say := teller{env.Stderr}.say
	sctx, stop := signal.NotifyContext(context.Background(), cli.Signals()...)
	defer stop()
	ctx, cancel := context.WithTimeout(sctx, demoBudget)
	defer cancel()
	begin := time.Now()
	if err := demo(ctx, env); err != nil {
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
	teller
	env        *cli.Env
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

func demo(ctx context.Context, env *cli.Env) error {
	r := &demoRun{teller: teller{env.Stderr}, env: env, ctx: ctx}
	r.say("starting an embedded etcd server on a free loopback port")
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
	r.endpoint, r.dbPath = srv.Endpoint, filepath.Join(dir, "bank.db")
	if r.db, err = openDemoStores(ctx, r.dbPath); err != nil {
		return err
	}
	defer r.db.Close()
	r.say("etcd at %s; lock %q (lease TTL %v); %s holds balance 100 in two twin SQLite stores: one fenced, one not",
		srv.Endpoint, demoLock, demoTTL, demoAccount)
	defer r.close()
	for _, step := range []func() error{r.startA, r.queueBehindA, r.pauseA, r.resumeA, r.handOverToC} {
		if err := step(); err != nil {
			return err
		}
	}
	return r.verdict()
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
	a, err := startHolder(r.ctx, r.env, r.endpoint, r.dbPath)
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
	r.say("A (pid %d) is granted the lock with token %d", a.cmd.Process.Pid, r.st.tokenA)
	if _, err := a.expect(r.ctx, "read"); err != nil {
		return err
	}
	r.say("A reads balance 100 and prepares its write: withdraw 30, so balance := 70")
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
	r.say("B queues behind A")
	r.gotC = r.c.lockAsync(r.ctx)
	if err := r.c.awaitEntries(r.ctx, 3); err != nil {
		return fmt.Errorf("C did not queue: %w", err)
	}
	r.say("C queues behind B")
	return nil
}

// pauseA freezes A until its lease expires and B is granted, and lets B
// write its deposit to both stores.
func (r *demoRun) pauseA() error {
	if err := r.a.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		return fmt.Errorf("pause A: %w", err)
	}
	r.paused = time.Now()
	r.say("A freezes before it writes (SIGSTOP, like a long GC or VM pause); its lease can no longer be kept alive")
	var err error
	if r.leaseB, err = awaitGrant(r.ctx, r.gotB, "B"); err != nil {
		return err
	}
	r.st.tokenB = r.leaseB.Token()
	r.say("%v later A's lease has expired on the server: B is granted the lock with token %d", time.Since(r.paused).Round(100*time.Millisecond), r.st.tokenB)
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
	r.say("B reads balance 100, deposits 50 and writes balance := 150 with token %d to both stores", r.st.tokenB)
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
	r.say("A resumes after %v paused and sends the write it had prepared: balance := 70 with token %d",
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
	r.say("A is told its lease is %s", line[0])
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
		r.say("the fenced store rejects A's write: token %d is older than the stored %d", r.st.tokenA, r.st.fencedStored)
	case store == "fenced":
		r.say("the fenced store ACCEPTED A's stale write (%s)", strings.Join(line[1:], " "))
	case store == "unfenced" && outcome == "accepted":
		r.st.unfencedAccepted = true
		r.say("the unfenced twin accepts A's write: balance 70 overwrites B's 150")
	default:
		r.say("the unfenced twin did not take A's write (%s)", strings.Join(line[1:], " "))
	}
}

// handOverToC releases B; C is granted, reads both stores and writes to
// the fenced one with its newer token.
func (r *demoRun) handOverToC() error {
	if err := r.leaseB.Release(r.ctx); err != nil {
		return fmt.Errorf("B's release: %w", err)
	}
	r.say("B releases")
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
	r.say("C is granted the lock with token %d and reads: fenced balance %d, unfenced balance %d; its fenced write is accepted",
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
	r.say("fenced resource rejected A's late write with token %d (stored %d from B); the unfenced twin accepted it and lost B's update",
		st.tokenA, st.tokenB)
	return nil
}
