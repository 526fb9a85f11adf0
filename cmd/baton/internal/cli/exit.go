// Package cli is what every subcommand of baton shares: the exit codes
// (sysexits), usage errors, the process environment a command reads and
// writes (Env: streams, variables, notes), and the flag and output
// helpers.
package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"

	"github.com/baton-go/baton"
)

// Exit codes. baton follows sysexits(3) so that shell scripts and cron can
// tell "the lock was busy" from "the backend is down" from "the command
// failed"; any other status is the command's own.
const (
	// ExitOK: the command ran under the lock and exited 0 (or demo passed).
	ExitOK = 0
	// ExitDemoFailed: `baton demo` ran, but the story did not happen as it
	// must (for example the fenced store accepted the late write).
	ExitDemoFailed = 1
	// ExitUsage (EX_USAGE): bad flag, bad duration, a --ttl of zero or less,
	// a bad or unsupported backend URL, an invalid lock name, a missing
	// COMMAND, a --min-hold or --max-hold that is not positive or a
	// --min-hold over --max-hold or its cap, a duration over its cap
	// (--ttl, --wait, --max-hold, --grace, --connect-timeout), a
	// relative sqlite:// path, a set but blank BATON_BACKEND, a bad
	// --log-format or --log-level, or a subcommand this release does not
	// implement yet.
	ExitUsage = 64
	// ExitNoEntry (EX_NOINPUT): `clean --force-release ENTRY` names no
	// entry of the queue (it may have gone meanwhile).
	ExitNoEntry = 66
	// ExitUnavailable (EX_UNAVAILABLE): no connection or session within
	// --connect-timeout, or the session was lost while waiting.
	ExitUnavailable = 69
	// ExitSoftware (EX_SOFTWARE): an internal error baton cannot classify.
	ExitSoftware = 70
	// ExitTempFail (EX_TEMPFAIL): the backend answered but the lock stayed
	// taken until --wait ran out (or the single --wait 0 attempt failed).
	// --quiet-busy makes this exit silent: on a fleet running one
	// scheduled job, every host but one exits 75 each period.
	ExitTempFail = 75
	// ExitCantCreate (EX_CANTCREAT): `clean --force-release --apply` could
	// not save its evidence, so it removed nothing.
	ExitCantCreate = 73
	// ExitLost (EX_PROTOCOL): the lock was lost while COMMAND ran. The
	// command was sent SIGTERM (SIGKILL after --grace); whatever it
	// returned, its work may have overlapped the next holder's.
	ExitLost = 76
	// ExitNoPerm (EX_NOPERM): the backend refused authentication or TLS.
	ExitNoPerm = 77
	// ExitMaxHold: COMMAND held the lock for --max-hold and was ended
	// (SIGTERM, SIGKILL after --grace), whatever status it then returned.
	// 124 is what timeout(1) exits with when its command timed out, so
	// scripts that know timeout read it alike.
	ExitMaxHold = 124
	// ExitNotExecutable: COMMAND exists but cannot be executed (as sh does).
	ExitNotExecutable = 126
	// ExitNotFound: COMMAND was not found (as sh does).
	ExitNotFound = 127
	// ExitSignalBase: a command killed by signal n exits 128+n (as sh does);
	// baton itself interrupted by signal n while acquiring does the same.
	ExitSignalBase = 128
)

// UsageError is a mistake on the command line; it exits ExitUsage.
type UsageError struct{ msg string }

func (e *UsageError) Error() string { return e.msg }

func Usagef(format string, args ...any) error {
	return &UsageError{msg: fmt.Sprintf(format, args...)}
}

// ExitError carries an exit code chosen where the failure was understood.
type ExitError struct {
	code int
	err  error
}

func (e *ExitError) Error() string { return e.err.Error() }
func (e *ExitError) Unwrap() error { return e.err }

func WithCode(code int, err error) error { return &ExitError{code: code, err: err} }

// Signals are the signals baton catches: while acquiring they abort the
// acquire; while COMMAND runs they are forwarded to its process group.
func Signals() []os.Signal { return []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP} }

// SignalFromCause recovers the signal that cancelled a signal.NotifyContext
// context. Go reports it only as a cause whose text names the signal.
func SignalFromCause(ctx context.Context) (syscall.Signal, bool) {
	cause := context.Cause(ctx)
	if cause == nil || ctx.Err() == nil {
		return 0, false
	}
	for _, s := range Signals() {
		if cause.Error() == s.String()+" signal received" {
			return s.(syscall.Signal), true
		}
	}
	return 0, false
}

// Classify picks the exit code for an error from the connect or acquire
// phase. sigCtx is the command's signal context (context.Background()
// where no signal cancels anything). waited reports whether a --wait
// deadline (not the connect timeout) bounded the failed call, so that a
// deadline means "still taken".
func Classify(sigCtx context.Context, err error, waited bool) int {
	var ee *ExitError
	var ue *UsageError
	switch {
	case errors.As(err, &ee):
		return ee.code
	case errors.As(err, &ue):
		return ExitUsage
	}
	if s, ok := SignalFromCause(sigCtx); ok {
		return ExitSignalBase + int(s)
	}
	switch {
	case errors.Is(err, baton.ErrInvalidName), errors.Is(err, baton.ErrInvalidOption):
		return ExitUsage
	case errors.Is(err, baton.ErrAuth):
		return ExitNoPerm
	case errors.Is(err, baton.ErrUnavailable), errors.Is(err, baton.ErrSessionLost):
		return ExitUnavailable
	case errors.Is(err, baton.ErrNotAcquired):
		return ExitTempFail
	case waited && errors.Is(err, context.DeadlineExceeded):
		return ExitTempFail
	}
	// Anything else kept the lock from us for a reason other than
	// contention: count it as the backend's failure.
	return ExitUnavailable
}
