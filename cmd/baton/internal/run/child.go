package run

import (
	"errors"
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
	"github.com/baton-go/baton/cmd/baton/internal/backend"
	"github.com/baton-go/baton/cmd/baton/internal/cli"
)

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
func failExec(env *cli.Env, name string, err error) int {
	env.Note("cannot run %q: %v", name, err)
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
func supervise(env *cli.Env, h *holding, cfg *config, path string, sigc <-chan os.Signal, lg *slog.Logger) (int, time.Time) {
	cmd, tty := childCommand(env, h, cfg, path)
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
		defer cli.TakeTerminal(env.Stdin)
	}
	if err != nil {
		return failExec(env, cfg.command[0], err), time.Time{}
	}
	started := time.Now()
	// Only COMMAND's name: its arguments may carry secrets.
	lg.Info("command started", "pid", cmd.Process.Pid, "command", cfg.command[0])
	waitc := make(chan error, 1)
	go func() { waitc <- cmd.Wait() }() // ends when the child does
	w := &childWatch{env: env, h: h, cfg: cfg, pgid: cmd.Process.Pid, last: baton.Held}
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
func childCommand(env *cli.Env, h *holding, cfg *config, path string) (cmd *exec.Cmd, tty bool) {
	cmd = exec.Command(path, cfg.command[1:]...)
	cmd.Args[0] = cfg.command[0]
	cmd.Stdin, cmd.Stdout, cmd.Stderr = env.Stdin, env.Stdout, env.Stderr
	vars := env.Environ()
	if cfg.scrubEnv {
		vars = backend.ScrubEnv(vars)
	}
	cmd.Env = childEnv(vars, h.lease, h.env)
	// Own process group: signals reach COMMAND and everything it spawned,
	// and never baton itself. Pdeathsig: COMMAND dies with baton even when
	// baton is SIGKILLed, so it never runs on without a lock holder.
	attr := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	tty = cli.ForegroundTTY(env.Stdin)
	if tty {
		attr.Foreground, attr.Ctty = true, int(env.Stdin.Fd())
	}
	cmd.SysProcAttr = attr
	return cmd, tty
}

// childWatch follows the lease while COMMAND runs and acts on COMMAND's
// process group: stop and continue it with --on-suspend=stop, SIGTERM it
// on loss and SIGKILL it after --grace. It runs on supervise's goroutine.
type childWatch struct {
	env     *cli.Env
	h       *holding
	cfg     *config
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
			return w.exitStatus(cmd, err)
		case s := <-sigc:
			w.signal(s.(syscall.Signal))
		case <-changed:
		case <-w.grace:
			w.env.Note("COMMAND still running %v after SIGTERM: SIGKILL", w.cfg.grace)
			w.signal(syscall.SIGKILL)
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
			w.signal(syscall.SIGSTOP)
			w.stopped = true
			w.env.Note("%s %q suspended (ownership in doubt): COMMAND stopped", noun, l.Name())
		} else {
			w.env.Note("%s %q suspended (ownership in doubt)", noun, l.Name())
		}
	case baton.Held:
		if w.stopped {
			w.signal(syscall.SIGCONT)
			w.stopped = false
			w.env.Note("%s %q held again: COMMAND continued", noun, l.Name())
		} else {
			w.env.Note("%s %q held again", noun, l.Name())
		}
	case baton.Lost:
		w.lost = true
		w.env.Note("%s %q lost (token %d): SIGTERM to COMMAND, SIGKILL after %v", noun, l.Name(), l.Token(), w.cfg.grace)
		w.terminate()
	}
}

// expire ends COMMAND because it held for --max-hold.
func (w *childWatch) expire() {
	if w.lost {
		return // already being ended, for a graver reason
	}
	w.expired = true
	w.env.Note("%s %q held for --max-hold %v: SIGTERM to COMMAND, SIGKILL after %v", w.h.noun, w.h.lease.Name(), w.cfg.maxHold, w.cfg.grace)
	w.terminate()
}

// terminate sends COMMAND's group SIGTERM and arms the SIGKILL of
// --grace, once: a loss after --max-hold ran out does not restart it.
func (w *childWatch) terminate() {
	w.signal(syscall.SIGTERM)
	if w.stopped {
		// Continue it after the SIGTERM is pending, so the first
		// thing it does is handle it.
		w.signal(syscall.SIGCONT)
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
		w.signal(syscall.SIGKILL)
		w.env.Note("exit %d: COMMAND ended by --max-hold %v (its status was %d)", cli.ExitMaxHold, w.cfg.maxHold, status)
		return cli.ExitMaxHold
	}
	if !w.lost {
		return status
	}
	// Whatever COMMAND left behind in its group was running without the
	// lock; it had its SIGTERM.
	w.signal(syscall.SIGKILL)
	w.env.Note("exit %d: %s %q was lost while COMMAND ran (COMMAND's status was %d)", cli.ExitLost, w.h.noun, l.Name(), status)
	return cli.ExitLost
}

// exitStatus turns COMMAND's end into baton's exit code: its status, or
// 128+n when signal n killed it.
func (w *childWatch) exitStatus(cmd *exec.Cmd, err error) int {
	ps := cmd.ProcessState
	if ps == nil {
		w.env.Note("waiting for COMMAND: %v", err)
		return cli.ExitSoftware
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return cli.ExitSignalBase + int(ws.Signal())
	}
	return ps.ExitCode()
}

// signal sends s to COMMAND's process group. ESRCH (the group is gone)
// is not an error: it means there is no one left to tell.
func (w *childWatch) signal(s syscall.Signal) {
	if err := syscall.Kill(-w.pgid, s); err != nil && !errors.Is(err, syscall.ESRCH) {
		w.env.Note("signal %v to COMMAND: %v", s, err)
	}
}
