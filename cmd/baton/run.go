package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/cmd/baton/internal/cli"
	"github.com/baton-go/baton/engine"
)

// runMain is `baton run`: hold a lock (mutex, a side of a read/write
// lock, or a semaphore permit) while COMMAND runs.
func runMain(args []string) int {
	cfg, err := parseRun(args, os.Getenv)
	return holdMain(cfg, err, args, runUsage, takeLock)
}

// electMain is `baton elect`: lead while COMMAND runs.
func electMain(args []string) int {
	cfg, err := parseElect(args, os.Getenv)
	return holdMain(cfg, err, args, electUsage, campaign)
}

// holding is what run or elect holds while COMMAND runs.
type holding struct {
	lease   *baton.Lease
	noun    string   // "lock" or "leadership", for messages
	env     []string // environment beyond BATON_LOCK/TOKEN/ENGINE: BATON_BACKEND, BATON_EPOCH
	release func(ctx context.Context) error
}

// taker obtains the holding on a connected backend, honouring --wait.
type taker func(ctx context.Context, cfg *runConfig, b *backend, name string) (*holding, error)

// holdMain is the body `run` and `elect` share: check everything that can
// be checked offline, connect, take, supervise COMMAND, give back. args
// is the command line cfg was parsed from (with err, if it did not parse).
func holdMain(cfg *runConfig, err error, args []string, usage string, take taker) int {
	if err != nil {
		if logFormatArg(args) == logJSON {
			// The command line asked for JSON records: its usage error is
			// one too, though it stopped parsing before --log-format.
			env.SetJSON(slog.New(slog.NewJSONHandler(newRedactor(os.Stderr, backendArg(args), os.Getenv), nil)))
		}
		return fail(err)
	}
	if cfg.help {
		return env.ShowHelp(usage)
	}
	lg, events := newHoldLog(os.Stderr, cfg)
	cfg.observer = holdObserver(events)
	name, path, code := preflight(cfg)
	if code >= 0 {
		return code
	}
	ctx, stop := signal.NotifyContext(context.Background(), cli.Signals...)
	defer stop()
	b, err := openBackend(ctx, cfg, name)
	if err != nil {
		return failAcquire(ctx, cfg, name, err, false)
	}
	defer b.close()
	start := time.Now()
	h, err := take(ctx, cfg, b, name)
	if err != nil {
		return failAcquire(ctx, cfg, name, err, false) // acquire and campaign mark a --wait that ran out
	}
	if b.granted != nil {
		b.granted()
	}
	u, _ := splitURL(cfg.backend) // preflight parsed it
	lg.Info("acquired", "token", h.lease.Token(), "engine", h.lease.Engine(),
		"backend", u.redacted, "wait_ms", millis(time.Since(start)))
	child, dropped := childBackend(cfg.backend)
	h.env = append([]string{"BATON_BACKEND=" + child}, h.env...)
	if dropped {
		lg.Info("COMMAND's BATON_BACKEND leaves out the URL's user and password: a nested baton needs them from the engine's variables ("+
			passwordHint(u.scheme)+")", "child_backend", child)
	}

	// From here on signals are cli.Signals to COMMAND, not acted on: catch
	// them on sigc before the acquire's handler goes away, so none is
	// lost and none takes its default action (killing baton and leaving
	// COMMAND orphaned).
	sigc := make(chan os.Signal, 8)
	signal.Notify(sigc, cli.Signals...)
	defer signal.Stop(sigc)
	stop()

	if s, ok := cli.SignalFromCause(ctx); ok {
		// Interrupted in the instant between grant and hand-over.
		note("interrupted by %v before COMMAND started", s)
		code = cli.ExitSignalBase + int(s)
	} else {
		var started time.Time
		code, started = supervise(h, cfg, path, sigc, lg)
		holdFloor(h, cfg, lg, started, sigc)
	}
	releaseHolding(h, cfg, name, code, lg)
	return code
}

// millis is d in milliseconds, as the records carry durations.
func millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// holdFloor keeps h until --min-hold has passed since COMMAND started
// (started is zero when it never did), so that a job scheduled on many
// hosts runs once per period even when it ends at once: the other hosts
// find the lock taken. A loss or a signal ends the wait early.
func holdFloor(h *holding, cfg *runConfig, lg *slog.Logger, started time.Time, sigc <-chan os.Signal) {
	if cfg.minHold == 0 || started.IsZero() {
		return
	}
	left := cfg.minHold - time.Since(started)
	if left <= 0 {
		return
	}
	lg.Info("holding for --min-hold", "left_ms", millis(left))
	t := time.NewTimer(left)
	defer t.Stop()
	for {
		st, changed := h.lease.Observe()
		if st == baton.Lost {
			return // releaseHolding says so
		}
		select {
		case <-t.C:
			return
		case s := <-sigc:
			lg.Info("--min-hold cut short by a signal", "signal", s.String())
			return
		case <-changed:
		}
	}
}

// preflight checks what can be checked before connecting: the name, the
// backend URL, and COMMAND, resolved before taking the lock (a typo should
// not hold a lock, nor wait for one). A non-negative code means the
// command is over with that exit code.
func preflight(cfg *runConfig) (name, path string, code int) {
	name, err := engine.ValidateName(cfg.name)
	if err != nil {
		return "", "", fail(err)
	}
	if err := parseBackend(cfg.backend); err != nil {
		return "", "", fail(err)
	}
	noteEmbedded(cfg)
	path, err = lookCommand(cfg.command[0])
	if err != nil {
		return "", "", failExec(cfg.command[0], err)
	}
	return name, path, -1
}

// releaseHolding releases h once COMMAND is over (code is baton's exit
// code so far). A failure is only noted: the entry goes with the session.
func releaseHolding(h *holding, cfg *runConfig, name string, code int, lg *slog.Logger) {
	rctx, cancel := context.WithTimeout(context.Background(), cfg.connectTimeout)
	defer cancel()
	err := h.release(rctx)
	switch {
	case err == nil:
		lg.Info("released", "token", h.lease.Token())
	case errors.Is(err, baton.ErrLost):
		if code != cli.ExitLost {
			note("%s %q was lost after COMMAND exited, before release: %v", h.noun, name, err)
		}
	default:
		note("release of %s %q failed (the entry goes with the session): %v", h.noun, name, err)
	}
}

// takeLock takes the lock of `run`: the mutex, or the --read / --write
// side of the RW lock, or a --shared permit.
func takeLock(ctx context.Context, cfg *runConfig, b *backend, name string) (*holding, error) {
	m, err := b.locker(name, cfg.mode, cfg.permits)
	if err != nil {
		return nil, err
	}
	l, err := acquire(ctx, cfg, m)
	if err != nil {
		return nil, err
	}
	return &holding{lease: l, noun: "lock", release: l.Release}, nil
}

// acquire takes the lock as --wait says: forever; or, for a --wait D of at
// least --connect-timeout, one wait of D; or, for a shorter D, one attempt
// then, if the lock is taken and D has time left, a wait until D after
// the attempt began. That attempt is bounded by --connect-timeout, not by
// D, so that a free lock is granted whatever D (even 1ns), a connection
// still being set up (SQL dials at the first statement) is not charged
// to D, and an unreachable backend is not mistaken for a busy lock. A
// wait of D ≥ --connect-timeout leaves room for both and keeps its one
// place in line: on ZooKeeper and etcd an attempt and a wait are two
// entries, and a waiter queued between them would go first.
func acquire(ctx context.Context, cfg *runConfig, m baton.Locker) (*baton.Lease, error) {
	if !cfg.waitSet {
		return m.Lock(ctx)
	}
	if cfg.wait >= cfg.connectTimeout {
		wctx, cancel := context.WithTimeout(ctx, cfg.wait)
		defer cancel()
		l, err := m.Lock(wctx)
		return l, waitRanOut(ctx, wctx, err)
	}
	deadline := time.Now().Add(cfg.wait)
	tctx, cancel := context.WithTimeout(ctx, cfg.connectTimeout)
	l, err := m.TryLock(tctx)
	cancel()
	if err == nil || !errors.Is(err, baton.ErrNotAcquired) || !time.Now().Before(deadline) {
		return l, err
	}
	wctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	l, err = m.Lock(wctx)
	return l, waitRanOut(ctx, wctx, err)
}

// waitRanOut is err of an acquire or campaign bounded by wctx, the rest of
// --wait, after an attempt found the lock taken: when --wait ran out
// (and neither a signal, a refusal nor a lost session ended it) the lock
// stayed taken, exit 75, even if the last attempt, cut by the deadline,
// never got its answer.
func waitRanOut(ctx, wctx context.Context, err error) error {
	if err == nil || ctx.Err() != nil || !errors.Is(wctx.Err(), context.DeadlineExceeded) ||
		errors.Is(err, baton.ErrAuth) || errors.Is(err, baton.ErrSessionLost) {
		return err
	}
	return cli.WithCode(cli.ExitTempFail, err)
}

// campaign wins the election of `elect` as --wait says. Elections have no
// single-attempt campaign: with --wait, a leader found at once makes it
// 75 (--wait 0) or a campaign for the rest of --wait; without a leader it
// campaigns for the rest of --wait, but at least --connect-timeout, so
// that a free election is won whatever --wait (a rival that wins the race
// in between makes it 75, too).
func campaign(ctx context.Context, cfg *runConfig, b *backend, name string) (*holding, error) {
	e, err := b.election(name)
	if err != nil {
		return nil, err
	}
	var ld *baton.Leader
	if cfg.waitSet {
		ld, err = campaignWithin(ctx, cfg, e, name)
	} else {
		ld, err = e.Campaign(ctx)
	}
	if err != nil {
		return nil, err
	}
	epoch := strconv.FormatUint(ld.Epoch(), 10)
	return &holding{
		lease: ld.Lease(),
		noun:  "leadership",
		env:   []string{"BATON_EPOCH=" + epoch},
		// COMMAND has exited: there is nothing left to drain or
		// checkpoint, so resigning is just releasing: stop the work, then
		// give the lock back, never the other way round.
		release: func(ctx context.Context) error { return ld.Resign(ctx, baton.ResignPlan{}) },
	}, nil
}

// campaignWithin is campaign under --wait (see campaign).
func campaignWithin(ctx context.Context, cfg *runConfig, e baton.Elector, name string) (*baton.Leader, error) {
	deadline := time.Now().Add(cfg.wait)
	tctx, cancel := context.WithTimeout(ctx, cfg.connectTimeout)
	defer cancel()
	cur, lerr := e.Leader(tctx)
	switch {
	case lerr == nil && !time.Now().Before(deadline):
		return nil, fmt.Errorf("election %q is led by session %s: %w", name, cur.Session, baton.ErrNotAcquired)
	case lerr == nil:
		wctx, cancel := context.WithDeadline(ctx, deadline)
		defer cancel()
		ld, err := e.Campaign(wctx)
		return ld, waitRanOut(ctx, wctx, err)
	case !errors.Is(lerr, baton.ErrNoLeader):
		return nil, lerr
	}
	cctx, cancel := context.WithDeadline(ctx, later(deadline, time.Now().Add(cfg.connectTimeout)))
	defer cancel()
	ld, err := e.Campaign(cctx)
	if err != nil && errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		lctx, cancel := context.WithTimeout(ctx, cfg.connectTimeout)
		defer cancel()
		if cur, lerr := e.Leader(lctx); lerr == nil {
			err = fmt.Errorf("election %q was won by session %s: %w", name, cur.Session, baton.ErrNotAcquired)
		}
	}
	return ld, err
}

// later is the later of a and b.
func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// failAcquire reports a connect or acquire failure and returns its code.
func failAcquire(sigCtx context.Context, cfg *runConfig, name string, err error, waited bool) int {
	code := cli.Classify(sigCtx, err, waited)
	switch {
	case code == cli.ExitUsage:
		return fail(err)
	case code == cli.ExitTempFail && cfg.quietBusy:
		// A scheduled job on many hosts: a busy lock is the normal case.
	case code == cli.ExitTempFail && errors.Is(err, baton.ErrNotAcquired):
		note("%q is held by another owner: %v", name, err)
	case code == cli.ExitTempFail:
		note("%q stayed taken for --wait %v", name, cfg.wait)
	case code == cli.ExitUnavailable:
		note("backend unreachable: %v", err)
	case code == cli.ExitNoPerm:
		note("backend refused authentication or TLS: %v", err)
	case code > cli.ExitSignalBase:
		note("interrupted by %v while acquiring %q", syscall.Signal(code-cli.ExitSignalBase), name)
	default:
		note("%v", err)
	}
	return code
}

// lookCommand finds COMMAND as a shell would. A relative PATH entry
// (exec.ErrDot) is accepted, as the shell accepts it: the user chose that
// PATH for the command they typed.
func lookCommand(name string) (string, error) {
	path, err := exec.LookPath(name)
	if err != nil && errors.Is(err, exec.ErrDot) {
		return path, nil
	}
	return path, err
}

// failExec maps a failure to find or start COMMAND to 126 or 127, as sh.
func failExec(name string, err error) int {
	note("cannot run %q: %v", name, err)
	if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return cli.ExitNotFound
	}
	return cli.ExitNotExecutable
}

// childEnv is the environment of COMMAND: baton's own, with BATON_LOCK,
// BATON_TOKEN, BATON_ENGINE and the keys of extra (BATON_BACKEND, the
// effective backend without its password; BATON_EPOCH) replaced.
func childEnv(env []string, l *baton.Lease, extra []string) []string {
	replaced := map[string]bool{"BATON_LOCK": true, "BATON_TOKEN": true, "BATON_ENGINE": true}
	for _, kv := range extra {
		k, _, _ := strings.Cut(kv, "=")
		replaced[k] = true
	}
	out := make([]string, 0, len(env)+3+len(extra))
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if replaced[k] {
			continue
		}
		out = append(out, kv)
	}
	out = append(out,
		"BATON_LOCK="+l.Name(),
		"BATON_TOKEN="+strconv.FormatUint(l.Token(), 10),
		"BATON_ENGINE="+l.Engine())
	return append(out, extra...)
}

// supervise runs COMMAND under the lease and returns baton's exit code
// and when COMMAND started (zero if it did not). It owns the child: every
// path out of it has reaped the child.
func supervise(h *holding, cfg *runConfig, path string, sigc <-chan os.Signal, lg *slog.Logger) (int, time.Time) {
	cmd, tty := childCommand(h, cfg, path)
	// Pdeathsig fires when the thread that forked the child exits, not the
	// process; keep this goroutine on its thread so the thread lives as
	// long as the child.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	err := cmd.Start()
	if tty {
		// From now on baton may be a background process of its terminal:
		// ignore SIGTTOU so its notes and the final hand-back of the
		// terminal do not stop it. Ignored only after Start, so COMMAND
		// does not inherit the ignored disposition.
		signal.Ignore(syscall.SIGTTOU)
		defer signal.Reset(syscall.SIGTTOU)
		defer cli.TakeTerminal(os.Stdin)
	}
	if err != nil {
		return failExec(cfg.command[0], err), time.Time{}
	}
	started := time.Now()
	// Only COMMAND's name: its arguments may carry secrets.
	lg.Info("command started", "pid", cmd.Process.Pid, "command", cfg.command[0])
	waitc := make(chan error, 1)
	go func() { waitc <- cmd.Wait() }() // ends when the child does
	w := &childWatch{h: h, cfg: cfg, pgid: cmd.Process.Pid, last: baton.Held}
	if cfg.maxHold > 0 {
		w.limitTimer = time.NewTimer(cfg.maxHold)
		w.limit = w.limitTimer.C
	}
	defer w.stopTimers()
	status := w.run(cmd, waitc, sigc)
	code := w.verdict(status)
	lg.Info("command exited", "status", status, "exit", code, "ran_ms", millis(time.Since(started)))
	return code, started
}

// childCommand prepares COMMAND in a process group of its own, and in the
// terminal's foreground when baton has it.
func childCommand(h *holding, cfg *runConfig, path string) (cmd *exec.Cmd, tty bool) {
	cmd = exec.Command(path, cfg.command[1:]...)
	cmd.Args[0] = cfg.command[0]
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	env := os.Environ()
	if cfg.scrubEnv {
		env = scrubEnv(env)
	}
	cmd.Env = childEnv(env, h.lease, h.env)
	// Own process group: signals reach COMMAND and everything it spawned,
	// and never baton itself. Pdeathsig: COMMAND dies with baton even when
	// baton is SIGKILLed, so it never runs on without a lock holder.
	attr := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	tty = cli.ForegroundTTY(os.Stdin)
	if tty {
		attr.Foreground, attr.Ctty = true, int(os.Stdin.Fd())
	}
	cmd.SysProcAttr = attr
	return cmd, tty
}

// childWatch follows the lease while COMMAND runs and acts on COMMAND's
// process group: stop and continue it with --on-suspend=stop, SIGTERM it
// on loss and SIGKILL it after --grace. It runs on supervise's goroutine.
type childWatch struct {
	h       *holding
	cfg     *runConfig
	pgid    int
	last    baton.State
	lost    bool
	stopped bool // SIGSTOPped by us
	expired bool // ended by --max-hold
	timer   *time.Timer
	grace   <-chan time.Time // fires --grace after the SIGTERM of a loss or --max-hold

	limitTimer *time.Timer
	limit      <-chan time.Time // fires --max-hold after COMMAND started
}

// run forwards signals and follows the lease until COMMAND exits, and
// returns COMMAND's exit code.
func (w *childWatch) run(cmd *exec.Cmd, waitc <-chan error, sigc <-chan os.Signal) int {
	for {
		st, changed := w.h.lease.Observe()
		if st != w.last {
			w.last = st
			w.onState(st)
		}
		select {
		case err := <-waitc:
			return exitStatus(cmd, err)
		case s := <-sigc:
			signalGroup(w.pgid, s.(syscall.Signal))
		case <-changed:
		case <-w.grace:
			note("COMMAND still running %v after SIGTERM: SIGKILL", w.cfg.grace)
			signalGroup(w.pgid, syscall.SIGKILL)
			w.grace = nil
		case <-w.limit:
			w.limit = nil
			w.expire()
		}
	}
}

// onState acts on a change of the lease's state.
func (w *childWatch) onState(st baton.State) {
	l, noun := w.h.lease, w.h.noun
	switch st {
	case baton.Suspended:
		if w.cfg.stopOnSuspend {
			signalGroup(w.pgid, syscall.SIGSTOP)
			w.stopped = true
			note("%s %q suspended (ownership in doubt): COMMAND stopped", noun, l.Name())
		} else {
			note("%s %q suspended (ownership in doubt)", noun, l.Name())
		}
	case baton.Held:
		if w.stopped {
			signalGroup(w.pgid, syscall.SIGCONT)
			w.stopped = false
			note("%s %q held again: COMMAND continued", noun, l.Name())
		} else {
			note("%s %q held again", noun, l.Name())
		}
	case baton.Lost:
		w.lost = true
		note("%s %q lost (token %d): SIGTERM to COMMAND, SIGKILL after %v", noun, l.Name(), l.Token(), w.cfg.grace)
		w.terminate()
	}
}

// expire ends COMMAND because it held for --max-hold.
func (w *childWatch) expire() {
	if w.lost {
		return // already being ended, for a graver reason
	}
	w.expired = true
	note("%s %q held for --max-hold %v: SIGTERM to COMMAND, SIGKILL after %v", w.h.noun, w.h.lease.Name(), w.cfg.maxHold, w.cfg.grace)
	w.terminate()
}

// terminate sends COMMAND's group SIGTERM and arms the SIGKILL of
// --grace, once: a loss after --max-hold ran out does not restart it.
func (w *childWatch) terminate() {
	signalGroup(w.pgid, syscall.SIGTERM)
	if w.stopped {
		// Continue it after the SIGTERM is pending, so the first
		// thing it does is handle it.
		signalGroup(w.pgid, syscall.SIGCONT)
		w.stopped = false
	}
	if w.timer == nil {
		w.timer = time.NewTimer(w.cfg.grace)
		w.grace = w.timer.C
	}
}

// stopTimers stops the grace and --max-hold timers that were started.
func (w *childWatch) stopTimers() {
	for _, t := range []*time.Timer{w.timer, w.limitTimer} {
		if t != nil {
			t.Stop()
		}
	}
}

// verdict is baton's exit code once COMMAND exited with status: cli.ExitLost
// if the lease was lost meanwhile (even unnoticed until now), else status.
func (w *childWatch) verdict(status int) int {
	l := w.h.lease
	if l.State() == baton.Lost {
		w.lost = true
	}
	if !w.lost && w.expired {
		// What COMMAND left behind in its group would run on unlocked.
		signalGroup(w.pgid, syscall.SIGKILL)
		note("exit %d: COMMAND ended by --max-hold %v (its status was %d)", cli.ExitMaxHold, w.cfg.maxHold, status)
		return cli.ExitMaxHold
	}
	if !w.lost {
		return status
	}
	// Whatever COMMAND left behind in its group was running without the
	// lock; it had its SIGTERM.
	signalGroup(w.pgid, syscall.SIGKILL)
	note("exit %d: %s %q was lost while COMMAND ran (COMMAND's status was %d)", cli.ExitLost, w.h.noun, l.Name(), status)
	return cli.ExitLost
}

// exitStatus turns COMMAND's end into baton's exit code: its status, or
// 128+n when signal n killed it.
func exitStatus(cmd *exec.Cmd, err error) int {
	ps := cmd.ProcessState
	if ps == nil {
		note("waiting for COMMAND: %v", err)
		return cli.ExitSoftware
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return cli.ExitSignalBase + int(ws.Signal())
	}
	return ps.ExitCode()
}

// signalGroup sends s to the process group pgid. ESRCH (the group is gone)
// is not an error: it means there is no one left to tell.
func signalGroup(pgid int, s syscall.Signal) {
	if err := syscall.Kill(-pgid, s); err != nil && !errors.Is(err, syscall.ESRCH) {
		note("signal %v to COMMAND: %v", s, err)
	}
}
