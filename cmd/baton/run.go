package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/baton-go/baton"
)

// runMain is `baton run`: check everything that can be checked offline,
// connect, acquire, supervise COMMAND, release.
func runMain(args []string) int {
	cfg, err := parseRun(args, os.Getenv)
	if err != nil {
		return fail(err)
	}
	if cfg.help {
		fmt.Fprint(os.Stderr, runUsage)
		return exitOK
	}
	name, err := baton.ValidateName(cfg.name)
	if err != nil {
		return fail(err)
	}
	if err := parseBackend(cfg.backend); err != nil {
		return fail(err)
	}
	// Resolve COMMAND before taking the lock: a typo should not hold a
	// lock, nor wait for one.
	path, err := lookCommand(cfg.command[0])
	if err != nil {
		return failExec(cfg.command[0], err)
	}

	ctx, stop := signal.NotifyContext(context.Background(), forwarded...)
	defer stop()
	b, err := openBackend(ctx, cfg, name)
	if err != nil {
		return failAcquire(ctx, cfg, name, err, false)
	}
	defer b.close()
	m, err := b.mutex(name)
	if err != nil {
		return failAcquire(ctx, cfg, name, err, false)
	}
	lease, err := acquire(ctx, cfg, m)
	if err != nil {
		return failAcquire(ctx, cfg, name, err, cfg.waitSet && cfg.wait > 0)
	}
	if b.granted != nil {
		b.granted()
	}

	// From here on signals are forwarded to COMMAND, not acted on: catch
	// them on sigc before the acquire's handler goes away, so none is
	// lost and none takes its default action (killing baton and leaving
	// COMMAND orphaned).
	sigc := make(chan os.Signal, 8)
	signal.Notify(sigc, forwarded...)
	defer signal.Stop(sigc)
	stop()

	code := exitOK
	if s, ok := signalFromCause(ctx); ok {
		// Interrupted in the instant between grant and hand-over.
		note("interrupted by %v before COMMAND started", s)
		code = exitSignalBase + int(s)
	} else {
		code = supervise(lease, cfg, path, sigc)
	}
	rctx, cancel := context.WithTimeout(context.Background(), cfg.connectTimeout)
	defer cancel()
	if err := lease.Release(rctx); err != nil {
		if errors.Is(err, baton.ErrLost) {
			if code != exitLost {
				note("lock %q was lost after COMMAND exited, before release: %v", name, err)
			}
		} else {
			note("release of %q failed (the entry goes with the session): %v", name, err)
		}
	}
	return code
}

// acquire takes the mutex as --wait says: forever, one attempt, or until
// the wait runs out. A single attempt is bounded by --connect-timeout, so
// that an unreachable backend is not mistaken for a busy lock.
func acquire(ctx context.Context, cfg *runConfig, m baton.Locker) (*baton.Lease, error) {
	switch {
	case !cfg.waitSet:
		return m.Lock(ctx)
	case cfg.wait == 0:
		tctx, cancel := context.WithTimeout(ctx, cfg.connectTimeout)
		defer cancel()
		return m.TryLock(tctx)
	default:
		wctx, cancel := context.WithTimeout(ctx, cfg.wait)
		defer cancel()
		return m.Lock(wctx)
	}
}

// failAcquire reports a connect or acquire failure and returns its code.
func failAcquire(sigCtx context.Context, cfg *runConfig, name string, err error, waited bool) int {
	code := classify(sigCtx, err, waited)
	switch {
	case code == exitUsage:
		return fail(err)
	case code == exitTempFail && errors.Is(err, baton.ErrNotAcquired):
		note("lock %q is held by another owner", name)
	case code == exitTempFail:
		note("lock %q stayed taken for --wait %v", name, cfg.wait)
	case code == exitUnavailable:
		note("backend unreachable: %v", err)
	case code == exitNoPerm:
		note("backend refused authentication or TLS: %v", err)
	case code > exitSignalBase:
		note("interrupted by %v while acquiring %q", syscall.Signal(code-exitSignalBase), name)
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
		return exitNotFound
	}
	return exitNotExecutable
}

// childEnv is the environment of COMMAND: baton's own, with BATON_LOCK,
// BATON_TOKEN and BATON_ENGINE replaced. BATON_BACKEND stays as inherited.
func childEnv(env []string, l *baton.Lease) []string {
	out := make([]string, 0, len(env)+3)
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if k == "BATON_LOCK" || k == "BATON_TOKEN" || k == "BATON_ENGINE" {
			continue
		}
		out = append(out, kv)
	}
	return append(out,
		"BATON_LOCK="+l.Name(),
		"BATON_TOKEN="+strconv.FormatUint(l.Token(), 10),
		"BATON_ENGINE="+l.Engine())
}

// supervise runs COMMAND under the lease and returns baton's exit code. It
// owns the child: every path out of it has reaped the child.
func supervise(l *baton.Lease, cfg *runConfig, path string, sigc <-chan os.Signal) int {
	cmd := exec.Command(path, cfg.command[1:]...)
	cmd.Args[0] = cfg.command[0]
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = childEnv(os.Environ(), l)
	// Own process group: signals reach COMMAND and everything it spawned,
	// and never baton itself. Pdeathsig: COMMAND dies with baton even when
	// baton is SIGKILLed, so it never runs on without a lock holder.
	attr := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	tty := foregroundTTY()
	if tty {
		attr.Foreground, attr.Ctty = true, int(os.Stdin.Fd())
	}
	cmd.SysProcAttr = attr

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
		defer takeTerminal()
	}
	if err != nil {
		return failExec(cfg.command[0], err)
	}
	pgid := cmd.Process.Pid
	waitc := make(chan error, 1)
	go func() { waitc <- cmd.Wait() }() // ends when the child does

	var (
		last    = baton.Held
		lost    bool
		stopped bool
		grace   <-chan time.Time
		status  int
	)
	for done := false; !done; {
		st, changed := l.Observe()
		if st != last {
			last = st
			switch st {
			case baton.Suspended:
				if cfg.stopOnSuspend {
					signalGroup(pgid, syscall.SIGSTOP)
					stopped = true
					note("lock %q suspended (ownership in doubt): COMMAND stopped", l.Name())
				} else {
					note("lock %q suspended (ownership in doubt)", l.Name())
				}
			case baton.Held:
				if stopped {
					signalGroup(pgid, syscall.SIGCONT)
					stopped = false
					note("lock %q held again: COMMAND continued", l.Name())
				} else {
					note("lock %q held again", l.Name())
				}
			case baton.Lost:
				lost = true
				note("lock %q lost (token %d): SIGTERM to COMMAND, SIGKILL after %v", l.Name(), l.Token(), cfg.grace)
				signalGroup(pgid, syscall.SIGTERM)
				if stopped {
					// Continue it after the SIGTERM is pending, so the first
					// thing it does is handle it.
					signalGroup(pgid, syscall.SIGCONT)
					stopped = false
				}
				t := time.NewTimer(cfg.grace)
				defer t.Stop()
				grace = t.C
			}
		}
		select {
		case err := <-waitc:
			status = exitStatus(cmd, err)
			done = true
		case s := <-sigc:
			signalGroup(pgid, s.(syscall.Signal))
		case <-changed:
		case <-grace:
			note("COMMAND still running %v after SIGTERM: SIGKILL", cfg.grace)
			signalGroup(pgid, syscall.SIGKILL)
			grace = nil
		}
	}
	if l.State() == baton.Lost {
		lost = true
	}
	if lost {
		// Whatever COMMAND left behind in its group was running without the
		// lock; it had its SIGTERM.
		signalGroup(pgid, syscall.SIGKILL)
		note("exit %d: lock %q was lost while COMMAND ran (COMMAND's status was %d)", exitLost, l.Name(), status)
		return exitLost
	}
	return status
}

// exitStatus turns COMMAND's end into baton's exit code: its status, or
// 128+n when signal n killed it.
func exitStatus(cmd *exec.Cmd, err error) int {
	ps := cmd.ProcessState
	if ps == nil {
		note("waiting for COMMAND: %v", err)
		return exitSoftware
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return exitSignalBase + int(ws.Signal())
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
