package main

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
	// exitOK: the command ran under the lock and exited 0 (or demo passed).
	exitOK = 0
	// exitDemoFailed: `baton demo` ran, but the story did not happen as it
	// must (for example the fenced store accepted the late write).
	exitDemoFailed = 1
	// exitUsage (EX_USAGE): bad flag, bad duration, a --ttl of zero or less,
	// a bad or unsupported backend URL, an invalid lock name, a missing
	// COMMAND, a --min-hold or --max-hold that is not positive or a
	// --min-hold over --max-hold or maxMinHold, a duration over its cap
	// (maxTTL, maxWait, maxMaxHold, maxGrace, maxConnectTimeout), a
	// relative sqlite:// path, a set but blank BATON_BACKEND, a bad
	// --log-format or --log-level, or a subcommand this release does not
	// implement yet.
	exitUsage = 64
	// exitNoEntry (EX_NOINPUT): `clean --force-release ENTRY` names no
	// entry of the queue (it may have gone meanwhile).
	exitNoEntry = 66
	// exitUnavailable (EX_UNAVAILABLE): no connection or session within
	// --connect-timeout, or the session was lost while waiting.
	exitUnavailable = 69
	// exitSoftware (EX_SOFTWARE): an internal error baton cannot classify.
	exitSoftware = 70
	// exitTempFail (EX_TEMPFAIL): the backend answered but the lock stayed
	// taken until --wait ran out (or the single --wait 0 attempt failed).
	// --quiet-busy makes this exit silent: on a fleet running one
	// scheduled job, every host but one exits 75 each period.
	exitTempFail = 75
	// exitCantCreate (EX_CANTCREAT): `clean --force-release --apply` could
	// not save its evidence, so it removed nothing.
	exitCantCreate = 73
	// exitLost (EX_PROTOCOL): the lock was lost while COMMAND ran. The
	// command was sent SIGTERM (SIGKILL after --grace); whatever it
	// returned, its work may have overlapped the next holder's.
	exitLost = 76
	// exitNoPerm (EX_NOPERM): the backend refused authentication or TLS.
	exitNoPerm = 77
	// exitMaxHold: COMMAND held the lock for --max-hold and was ended
	// (SIGTERM, SIGKILL after --grace), whatever status it then returned.
	// 124 is what timeout(1) exits with when its command timed out, so
	// scripts that know timeout read it alike.
	exitMaxHold = 124
	// exitNotExecutable: COMMAND exists but cannot be executed (as sh does).
	exitNotExecutable = 126
	// exitNotFound: COMMAND was not found (as sh does).
	exitNotFound = 127
	// exitSignalBase: a command killed by signal n exits 128+n (as sh does);
	// baton itself interrupted by signal n while acquiring does the same.
	exitSignalBase = 128
)

// usageError is a mistake on the command line; it exits exitUsage.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// exitError carries an exit code chosen where the failure was understood.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func withCode(code int, err error) error { return &exitError{code: code, err: err} }

// forwarded are the signals baton catches: while acquiring they abort the
// acquire; while COMMAND runs they are forwarded to its process group.
var forwarded = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP}

// signalFromCause recovers the signal that cancelled a signal.NotifyContext
// context. Go reports it only as a cause whose text names the signal.
func signalFromCause(ctx context.Context) (syscall.Signal, bool) {
	cause := context.Cause(ctx)
	if cause == nil || ctx.Err() == nil {
		return 0, false
	}
	for _, s := range forwarded {
		if cause.Error() == s.String()+" signal received" {
			return s.(syscall.Signal), true
		}
	}
	return 0, false
}

// classify picks the exit code for an error from the connect or acquire
// phase. waited reports whether a --wait deadline (not the connect
// timeout) bounded the failed call, so that a deadline means "still taken".
func classify(sigCtx context.Context, err error, waited bool) int {
	var ee *exitError
	var ue *usageError
	switch {
	case errors.As(err, &ee):
		return ee.code
	case errors.As(err, &ue):
		return exitUsage
	}
	if s, ok := signalFromCause(sigCtx); ok {
		return exitSignalBase + int(s)
	}
	switch {
	case errors.Is(err, baton.ErrInvalidName), errors.Is(err, baton.ErrInvalidOption):
		return exitUsage
	case errors.Is(err, baton.ErrAuth):
		return exitNoPerm
	case errors.Is(err, baton.ErrUnavailable), errors.Is(err, baton.ErrSessionLost):
		return exitUnavailable
	case errors.Is(err, baton.ErrNotAcquired):
		return exitTempFail
	case waited && errors.Is(err, context.DeadlineExceeded):
		return exitTempFail
	}
	// Anything else kept the lock from us for a reason other than
	// contention: count it as the backend's failure.
	return exitUnavailable
}

// noSignal is the signal context of code paths that no signal cancels.
var noSignal = context.Background()
