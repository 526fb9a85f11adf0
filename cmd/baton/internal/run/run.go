package run

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/cmd/baton/internal/backend"
	"github.com/baton-go/baton/cmd/baton/internal/cli"
	"github.com/baton-go/baton/engine"
)

// Run is `baton run`: hold a lock (mutex, a side of a read/write lock,
// or a semaphore permit) while COMMAND runs.
func Run(env *cli.Env, args []string) int {
	cfg, err := parseRun(env, args)
	return holdMain(env, cfg, err, args, RunUsage, takeLock)
}

// Elect is `baton elect`: lead while COMMAND runs.
func Elect(env *cli.Env, args []string) int {
	cfg, err := parseElect(env, args)
	return holdMain(env, cfg, err, args, ElectUsage, campaign)
}

// holding is what run or elect holds while COMMAND runs.
type holding struct {
	lease   *baton.Lease
	noun    string   // "lock" or "leadership", for messages
	env     []string // environment beyond BATON_LOCK/TOKEN/ENGINE: BATON_BACKEND, BATON_EPOCH
	release func(ctx context.Context) error
}

// taker obtains the holding on a connected backend, honouring --wait.
type taker func(ctx context.Context, cfg *config, b *backend.Backend, name string) (*holding, error)

// holdMain is the body `run` and `elect` share: check everything that can
// be checked offline, connect, take, supervise COMMAND, give back. args
// is the command line cfg was parsed from (with err, if it did not parse).
func holdMain(env *cli.Env, cfg *config, err error, args []string, usage string, take taker) int {
	if err != nil {
		return failUsage(env, err, args)
	}
	if cfg.help {
		return env.ShowHelp(usage)
	}
	lg, events := newHoldLog(env, cfg)
	cfg.Observer = holdObserver(events)
	name, path, code := preflight(env, cfg)
	if code >= 0 {
		return code
	}
	ctx, stop := signal.NotifyContext(context.Background(), cli.Signals()...)
	defer stop()
	b, err := backend.Open(ctx, env, &cfg.Config, name)
	if err != nil {
		return failAcquire(ctx, env, cfg, name, err, false)
	}
	defer b.Close()
	start := time.Now()
	h, err := take(ctx, cfg, b, name)
	if err != nil {
		return failAcquire(ctx, env, cfg, name, err, false) // acquire and campaign mark a --wait that ran out
	}
	b.Granted()
	acquired(lg, h, cfg.URL, start)

	// From here on signals are forwarded to COMMAND, not acted on: catch
	// them on sigc before the acquire's handler goes away, so none is
	// lost and none takes its default action (killing baton and leaving
	// COMMAND orphaned).
	sigc := make(chan os.Signal, 8)
	signal.Notify(sigc, cli.Signals()...)
	defer signal.Stop(sigc)
	stop()

	if s, ok := cli.SignalFromCause(ctx); ok {
		// Interrupted in the instant between grant and hand-over.
		env.Note("interrupted by %v before COMMAND started", s)
		code = cli.ExitSignalBase + int(s)
	} else {
		var started time.Time
		code, started = supervise(env, h, cfg, path, sigc, lg)
		holdFloor(h, cfg, lg, started, sigc)
	}
	releaseHolding(env, h, cfg, name, code, lg)
	return code
}

// failUsage reports the usage error of a command line that did not
// parse (args). A command line that asked for JSON records gets its
// usage error as one too, though it stopped parsing before --log-format.
func failUsage(env *cli.Env, err error, args []string) int {
	if logFormatArg(args) == logJSON {
		u, _ := backend.SplitURL(backendArg(args)) // its password stays out of the record
		env.SetJSON(slog.New(slog.NewJSONHandler(newRedactor(env.Stderr, u.Password, env.Getenv), nil)))
	}
	return env.Fail(err)
}

// acquired records the grant of h after a wait since start, and sets
// COMMAND's BATON_BACKEND: u without its password.
func acquired(lg *slog.Logger, h *holding, u backend.URL, start time.Time) {
	lg.Info("acquired", "token", h.lease.Token(), "engine", h.lease.Engine(),
		"backend", u.Redacted, "wait_ms", millis(time.Since(start)))
	child, dropped := backend.ChildBackend(u)
	h.env = append([]string{"BATON_BACKEND=" + child}, h.env...)
	if dropped {
		lg.Info("COMMAND's BATON_BACKEND leaves out the URL's user and password: a nested baton needs them from the engine's variables ("+
			backend.PasswordHint(u.Scheme)+")", "child_backend", child)
	}
}

// millis is d in milliseconds, as the records carry durations.
func millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// holdFloor keeps h until --min-hold has passed since COMMAND started
// (started is zero when it never did), so that a job scheduled on many
// hosts runs once per period even when it ends at once: the other hosts
// find the lock taken. A loss or a signal ends the wait early.
func holdFloor(h *holding, cfg *config, lg *slog.Logger, started time.Time, sigc <-chan os.Signal) {
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
func preflight(env *cli.Env, cfg *config) (name, path string, code int) {
	name, err := engine.ValidateName(cfg.name)
	if err != nil {
		return "", "", env.Fail(err)
	}
	if err := backend.Check(&cfg.Config); err != nil {
		return "", "", env.Fail(err)
	}
	backend.NoteEmbedded(env, &cfg.Config)
	path, err = lookCommand(cfg.command[0])
	if err != nil {
		return "", "", failExec(env, cfg.command[0], err)
	}
	return name, path, -1
}

// releaseHolding releases h once COMMAND is over (code is baton's exit
// code so far). A failure is only noted: the entry goes with the session.
func releaseHolding(env *cli.Env, h *holding, cfg *config, name string, code int, lg *slog.Logger) {
	rctx, cancel := context.WithTimeout(context.Background(), cfg.ConnectTimeout)
	defer cancel()
	err := h.release(rctx)
	switch {
	case err == nil:
		lg.Info("released", "token", h.lease.Token())
	case errors.Is(err, baton.ErrLost):
		if code != cli.ExitLost {
			env.Note("%s %q was lost after COMMAND exited, before release: %v", h.noun, name, err)
		}
	default:
		env.Note("release of %s %q failed (the entry goes with the session): %v", h.noun, name, err)
	}
}

// takeLock takes the lock of `run`: the mutex, or the --read / --write
// side of the RW lock, or a --shared permit.
func takeLock(ctx context.Context, cfg *config, b *backend.Backend, name string) (*holding, error) {
	m, err := b.Locker(name, cfg.mode, cfg.permits)
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
func acquire(ctx context.Context, cfg *config, m baton.Locker) (*baton.Lease, error) {
	if !cfg.waitSet {
		return m.Lock(ctx)
	}
	if cfg.wait >= cfg.ConnectTimeout {
		wctx, cancel := context.WithTimeout(ctx, cfg.wait)
		defer cancel()
		l, err := m.Lock(wctx)
		return l, waitRanOut(ctx, wctx, err)
	}
	deadline := time.Now().Add(cfg.wait)
	tctx, cancel := context.WithTimeout(ctx, cfg.ConnectTimeout)
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
func campaign(ctx context.Context, cfg *config, b *backend.Backend, name string) (*holding, error) {
	e, err := b.Election(name)
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
func campaignWithin(ctx context.Context, cfg *config, e baton.Elector, name string) (*baton.Leader, error) {
	deadline := time.Now().Add(cfg.wait)
	tctx, cancel := context.WithTimeout(ctx, cfg.ConnectTimeout)
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
	cctx, cancel := context.WithDeadline(ctx, later(deadline, time.Now().Add(cfg.ConnectTimeout)))
	defer cancel()
	ld, err := e.Campaign(cctx)
	if err != nil && errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		lctx, cancel := context.WithTimeout(ctx, cfg.ConnectTimeout)
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
func failAcquire(sigCtx context.Context, env *cli.Env, cfg *config, name string, err error, waited bool) int {
	code := cli.Classify(sigCtx, err, waited)
	switch {
	case code == cli.ExitUsage:
		return env.Fail(err)
	case code == cli.ExitTempFail && cfg.quietBusy:
		// A scheduled job on many hosts: a busy lock is the normal case.
	case code == cli.ExitTempFail && errors.Is(err, baton.ErrNotAcquired):
		env.Note("%q is held by another owner: %v", name, err)
	case code == cli.ExitTempFail:
		env.Note("%q stayed taken for --wait %v", name, cfg.wait)
	case code == cli.ExitUnavailable:
		env.Note("backend unreachable: %v", err)
	case code == cli.ExitNoPerm:
		env.Note("backend refused authentication or TLS: %v", err)
	case code > cli.ExitSignalBase:
		env.Note("interrupted by %v while acquiring %q", syscall.Signal(code-cli.ExitSignalBase), name)
	default:
		env.Note("%v", err)
	}
	return code
}
