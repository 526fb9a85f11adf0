package run

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/batonslog"
	"github.com/baton-go/baton/cmd/baton/internal/backend"
	"github.com/baton-go/baton/cmd/baton/internal/cli"
)

// Log formats of run and elect (--log-format).
const (
	logText = "text" // log/slog's key=value lines; notes stay "baton: …" lines
	logJSON = "json" // one JSON object per stderr line, notes included
)

// parseLogLevel reads --log-level: only the four names slog prints, so
// that a typo is a usage error rather than an odd offset ("info+2").
func parseLogLevel(s string) (slog.Level, error) {
	switch s {
	case "debug":
		return slog.LevelDebug, nil
	case "info":
		return slog.LevelInfo, nil
	case "warn":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	}
	return 0, fmt.Errorf("--log-level %q: want debug, info, warn or error", s)
}

// newHoldLog returns run's and elect's logger on stderr for cfg's --log-format
// and --log-level, with the lock name on every record, and its handler
// without that attribute, for the engine's events (they carry the lock
// name themselves). In JSON mode the logger also takes over the notes.
func newHoldLog(env *cli.Env, cfg *config) (*slog.Logger, slog.Handler) {
	w := newRedactor(env.Stderr, cfg.URL.Password, env.Getenv)
	hopts := &slog.HandlerOptions{Level: cfg.logLevel}
	var h slog.Handler = slog.NewTextHandler(w, hopts)
	if cfg.logFormat == logJSON {
		h = slog.NewJSONHandler(w, hopts)
	}
	lg := slog.New(h).With("lock", cfg.name)
	if cfg.logFormat == logJSON {
		env.SetJSON(lg)
	}
	return lg, h
}

// holdObserver is the Observer run and elect pass to the engine: the
// engine's events as records of h, at the levels of eventLevels.
func holdObserver(h slog.Handler) baton.Observer {
	lv := &eventLevels{waited: map[uint64]bool{}}
	return batonslog.New(h, batonslog.Options{Level: lv.level})
}

// eventLevels chooses the level of an engine event for the CLI. The
// default (warn) shows only what needs someone: losses, stale writes,
// failed releases, failed or late renewals. Info adds suspensions and
// recoveries, a grant that had to wait and leadership changes; debug
// every acquire event. A busy lock or a --wait that ran out is not an
// event worth a record: the exit code (75) says it, and --quiet-busy
// must be able to keep stderr empty.
type eventLevels struct {
	mu     sync.Mutex
	waited map[uint64]bool // acquires that saw a retry, until they end
}

func (lv *eventLevels) level(e baton.Event) slog.Level {
	switch e.Kind {
	case baton.EventAcquireRetry:
		lv.mu.Lock()
		lv.waited[e.Acquire] = true
		lv.mu.Unlock()
	case baton.EventGranted, baton.EventAcquireFailed:
		lv.mu.Lock()
		waited := lv.waited[e.Acquire]
		delete(lv.waited, e.Acquire)
		lv.mu.Unlock()
		switch {
		case e.Kind == baton.EventGranted && (waited || e.Recipe == "election"):
			return slog.LevelInfo
		case e.Kind == baton.EventGranted, busy(e.Err):
			return slog.LevelDebug
		}
	case baton.EventReleased:
		if e.Recipe == "election" {
			return slog.LevelInfo // a leader resigned: leadership changes
		}
	}
	return batonslog.Level(e)
}

// busy reports whether an acquire failed only because the lock was
// taken (a TryLock) or the wait ran out.
func busy(err error) bool {
	return errors.Is(err, baton.ErrNotAcquired) || errors.Is(err, context.DeadlineExceeded)
}

// redactor writes records with every password baton knows of replaced by
// "***". The CLI's own records show only the redacted URL, but an
// engine's event carries the driver's error as it came, and a driver may
// quote its connection string; a record is one Write, so replacing in it
// catches every field at once.
type redactor struct {
	w io.Writer
	r *strings.Replacer
}

// newRedactor wraps w for password (the backend URL's) and those of the
// environment (getenv), in the forms they may be printed in: as given,
// unescaped from the URL, URL-escaped, and escaped inside quotes as the
// JSON and text handlers write strings. Without any, it returns w.
func newRedactor(w io.Writer, password string, getenv func(string) string) io.Writer {
	r := backend.SecretReplacer(password, getenv)
	if r == nil {
		return w
	}
	return redactor{w: w, r: r}
}

func (r redactor) Write(p []byte) (int, error) {
	if _, err := io.WriteString(r.w, r.r.Replace(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}
