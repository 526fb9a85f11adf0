package main

import (
	"context"
	"errors"
	"flag"
	"io"
	"os"
	"os/signal"
	"strconv"
	"time"

	"github.com/baton-go/baton/cmd/baton/internal/cli"
	"github.com/baton-go/baton/engine"
)

// adminConfig is a parsed `baton inspect` or `baton clean` command line.
type adminConfig struct {
	runConfig           // backend, connect timeout, session TTL, NAME
	json         bool   // inspect --json
	apply        bool   // clean --apply
	forceRelease string // clean --force-release ENTRY
	forceSet     bool
	evidenceDir  string // clean --evidence-dir
}

// parseAdmin parses `inspect` or `clean` (cmd) arguments: flags before or
// after the one NAME.
func parseAdmin(cmd string, args []string, getenv func(string) string) (*adminConfig, error) {
	cfg := &adminConfig{runConfig: runConfig{ttl: defaultTTL, connectTimeout: defaultConnectTimeout}}
	backendGiven := false
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Func("backend", "", func(s string) error { cfg.backend, backendGiven = s, true; return nil })
	fs.Var(cli.DurationValue{D: &cfg.connectTimeout}, "connect-timeout", "")
	switch cmd {
	case "inspect":
		fs.BoolVar(&cfg.json, "json", false, "")
	case "clean":
		fs.BoolVar(&cfg.apply, "apply", false, "")
		fs.Func("force-release", "", func(s string) error { cfg.forceRelease, cfg.forceSet = s, true; return nil })
		fs.StringVar(&cfg.evidenceDir, "evidence-dir", "", "")
	}
	positional, err := cli.ParseInterleaved(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		cfg.help = true
		return cfg, nil
	}
	if err != nil {
		return nil, cli.Usagef("%s: %v", cmd, err)
	}
	switch {
	case len(positional) == 0:
		return nil, cli.Usagef("%s: missing NAME (baton %s [flags] NAME)", cmd, cmd)
	case len(positional) > 1:
		return nil, cli.Usagef("%s: unexpected %q: %s takes one NAME", cmd, positional[1], cmd)
	}
	cfg.name = positional[0]
	if err := checkCommon(cmd, &cfg.runConfig); err != nil {
		return nil, err
	}
	if err := resolveBackend(cmd, &cfg.runConfig, backendGiven, getenv); err != nil {
		return nil, err
	}
	if cmd == "clean" {
		if err := checkClean(cfg.backend); err != nil {
			return nil, err
		}
	}
	cfg.readOnly = cmd == "inspect"
	return cfg, nil
}

// adminSession is a connected inspect or clean: the backend, the
// normalised name, and the signal context.
type adminSession struct {
	cfg  *adminConfig
	name string
	b    *backend
	ctx  context.Context
	stop func()
}

// openAdmin parses, validates and connects for inspect or clean. A
// non-negative code means the command is over with that exit code.
func openAdmin(cmd, usage string, args []string) (*adminSession, int) {
	cfg, err := parseAdmin(cmd, args, os.Getenv)
	if err != nil {
		return nil, fail(err)
	}
	if cfg.help {
		return nil, env.ShowHelp(usage)
	}
	name, err := engine.ValidateName(cfg.name)
	if err != nil {
		return nil, fail(err)
	}
	if cfg.forceSet {
		if err := refuseDirectory(name, cfg.forceRelease); err != nil {
			return nil, fail(err)
		}
	}
	if err := parseBackend(cfg.backend); err != nil {
		return nil, fail(err)
	}
	noteEmbedded(&cfg.runConfig)
	ctx, stop := signal.NotifyContext(context.Background(), cli.Signals...)
	b, err := openBackend(ctx, &cfg.runConfig, name)
	if err != nil {
		code := env.FailConnected(ctx, err)
		stop()
		return nil, code
	}
	return &adminSession{cfg: cfg, name: name, b: b, ctx: ctx, stop: stop}, -1
}

func (a *adminSession) close() {
	a.b.close()
	a.stop()
}

// inspectMain is `baton inspect`: the lock on stdout.
func inspectMain(args []string) int {
	a, code := openAdmin("inspect", inspectUsage, args)
	if a == nil {
		return code
	}
	defer a.close()
	return inspectLock(a, os.Stdout)
}

// inspectLock prints the lock as the engine's Inspect reads it: one table,
// or one JSON document, on every engine, with each holder's and waiter's
// host, pid and program where the engine stores them. The engine's error
// and notes may quote what a server or driver said: the backend's secrets
// are scrubbed from them.
func inspectLock(a *adminSession, w io.Writer) int {
	ctx, cancel := context.WithTimeout(a.ctx, a.cfg.connectTimeout)
	in, err := a.b.client.Inspect(ctx, a.name)
	cancel()
	u, _ := splitURL(a.cfg.backend) // openAdmin parsed it
	scrub := secretScrubber(u, os.Getenv)
	if err != nil {
		return env.FailConnected(a.ctx, scrubbedError{msg: scrub(err.Error()), err: err})
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
		note("write: %v", err)
		return cli.ExitSoftware
	}
	if in.Permits > 0 && !a.cfg.json {
		note("semaphore holders use N=%d", in.Permits)
	}
	if len(in.Holders)+len(in.Waiters)+len(in.Other) == 0 {
		note("%q has no entries on %s", a.name, a.b.engine)
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
