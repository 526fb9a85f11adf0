// Package inspect is `baton inspect` and `baton clean`: a lock's queue
// as every engine's Inspect reads it, and the removal of a queue engine's
// residue.
package inspect

import (
	"context"
	"io"
	"strconv"
	"time"

	"github.com/baton-go/baton/cmd/baton/internal/backend"
	"github.com/baton-go/baton/cmd/baton/internal/cli"
)

// Inspect is `baton inspect`: the lock on stdout.
func Inspect(env *cli.Env, args []string) int {
	a, code := openAdmin(env, "inspect", InspectUsage, args)
	if a == nil {
		return code
	}
	defer a.close()
	return inspectLock(a, env.Stdout)
}

// inspectLock prints the lock as the engine's Inspect reads it: one table,
// or one JSON document, on every engine, with each holder's and waiter's
// host, pid and program where the engine stores them. The engine's error
// and notes may quote what a server or driver said: the backend's secrets
// are scrubbed from them.
func inspectLock(a *adminSession, w io.Writer) int {
	ctx, cancel := context.WithTimeout(a.ctx, a.cfg.ConnectTimeout)
	in, err := a.b.Client.Inspect(ctx, a.name)
	cancel()
	scrub := backend.Scrubber(a.cfg.URL, a.env.Getenv)
	if err != nil {
		return a.env.FailConnected(a.ctx, backend.ScrubbedError{Msg: scrub(err.Error()), Err: err})
	}
	for i, n := range in.Notes {
		in.Notes[i] = scrub(n)
	}
	if a.cfg.json {
		err = cli.WriteJSON(w, toInspectionJSON(in))
	} else {
		err = writeInspection(w, in)
	}
	if err != nil {
		a.env.Note("write: %v", err)
		return cli.ExitSoftware
	}
	if in.Permits > 0 && !a.cfg.json {
		a.env.Note("semaphore holders use N=%d", in.Permits)
	}
	if len(in.Holders)+len(in.Waiters)+len(in.Other) == 0 {
		a.env.Note("%q has no entries on %s", a.name, a.b.Engine)
	}
	return cli.ExitOK
}

// ageText rounds an age for the table; 0 is unknown.
func ageText(d time.Duration) string {
	switch {
	case d <= 0:
		return "?"
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func tokenText(t uint64) string {
	if t == 0 {
		return "?"
	}
	return strconv.FormatUint(t, 10)
}
