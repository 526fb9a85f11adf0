package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
)

// Defaults of `baton run`.
const (
	// defaultTTL is the session timeout (ZooKeeper) or lease TTL (etcd): how
	// long a silent holder keeps the lock before the next waiter may have it.
	defaultTTL = 15 * time.Second
	// defaultConnectTimeout bounds reaching the backend, so a down backend
	// fails the run (exit 69) instead of hanging a cron job.
	defaultConnectTimeout = 10 * time.Second
	// defaultGrace is how long a command may clean up after SIGTERM when
	// the lock was lost, before SIGKILL.
	defaultGrace = 5 * time.Second
)

// runConfig is a parsed `baton run` command line.
type runConfig struct {
	backend        string        // --backend, else $BATON_BACKEND
	ttl            time.Duration // --ttl
	wait           time.Duration // --wait; meaningful only when waitSet
	waitSet        bool          // --wait given: absent means forever
	connectTimeout time.Duration // --connect-timeout
	grace          time.Duration // --grace
	stopOnSuspend  bool          // --on-suspend=stop
	name           string        // NAME as given
	command        []string      // COMMAND and its arguments
	help           bool          // -h/--help: print usage, exit 0
}

// durationValue is a flag.Value for durations that also takes a bare
// number as seconds (`--ttl 2`), as etcdctl and flock do.
type durationValue struct {
	d   *time.Duration
	set *bool
}

func (v durationValue) String() string {
	if v.d == nil {
		return ""
	}
	return v.d.String()
}

func (v durationValue) Set(s string) error {
	d, err := parseDuration(s)
	if err != nil {
		return err
	}
	*v.d = d
	if v.set != nil {
		*v.set = true
	}
	return nil
}

func parseDuration(s string) (time.Duration, error) {
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		if math.IsNaN(f) || math.IsInf(f, 0) || math.Abs(f) > float64(math.MaxInt64/int64(time.Second)) {
			return 0, fmt.Errorf("duration %q out of range", s)
		}
		return time.Duration(f * float64(time.Second)), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("bad duration %q (want e.g. 500ms, 15s, 2m)", s)
	}
	return d, nil
}

// parseRun parses `baton run` arguments (after the word "run"). Flags may
// come before or after NAME; the first "--" ends them and starts COMMAND,
// so COMMAND's own flags never reach baton.
func parseRun(args []string, getenv func(string) string) (*runConfig, error) {
	cfg := &runConfig{
		ttl:            defaultTTL,
		connectTimeout: defaultConnectTimeout,
		grace:          defaultGrace,
	}
	var (
		onSuspend    = "none"
		read, write  bool
		shared       int
		backendGiven bool
	)
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Func("backend", "", func(s string) error { cfg.backend, backendGiven = s, true; return nil })
	fs.Var(durationValue{d: &cfg.ttl}, "ttl", "")
	fs.Var(durationValue{d: &cfg.wait, set: &cfg.waitSet}, "wait", "")
	fs.Var(durationValue{d: &cfg.connectTimeout}, "connect-timeout", "")
	fs.Var(durationValue{d: &cfg.grace}, "grace", "")
	fs.StringVar(&onSuspend, "on-suspend", onSuspend, "")
	fs.BoolVar(&read, "read", false, "")
	fs.BoolVar(&write, "write", false, "")
	fs.IntVar(&shared, "shared", 0, "")

	own, command, sawDash := args, []string(nil), false
	for i, a := range args {
		if a == "--" {
			own, command, sawDash = args[:i], args[i+1:], true
			break
		}
	}
	var positional []string
	for {
		if err := fs.Parse(own); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				cfg.help = true
				return cfg, nil
			}
			return nil, usagef("run: %v", err)
		}
		if fs.NArg() == 0 {
			break
		}
		positional = append(positional, fs.Arg(0))
		own = fs.Args()[1:]
	}

	switch {
	case len(positional) == 0:
		return nil, usagef("run: missing NAME")
	case len(positional) > 1 && !sawDash:
		return nil, usagef("run: put -- between NAME and COMMAND (baton run [flags] NAME -- COMMAND [ARG...])")
	case len(positional) > 1:
		return nil, usagef("run: unexpected %q before --: only NAME goes there", positional[1])
	case !sawDash || len(command) == 0:
		return nil, usagef("run: missing COMMAND (baton run [flags] NAME -- COMMAND [ARG...])")
	}
	cfg.name, cfg.command = positional[0], command

	if read || write || shared != 0 {
		return nil, usagef("run: --read, --write and --shared (the read/write lock and the semaphore) land with a later release; this release runs mutexes only")
	}
	switch onSuspend {
	case "none":
	case "stop":
		cfg.stopOnSuspend = true
	default:
		return nil, usagef("run: --on-suspend=%q: want none or stop", onSuspend)
	}
	switch {
	case cfg.ttl <= 0:
		return nil, usagef("run: --ttl must be positive, got %v", cfg.ttl)
	case cfg.waitSet && cfg.wait < 0:
		return nil, usagef("run: --wait must not be negative, got %v", cfg.wait)
	case cfg.connectTimeout <= 0:
		return nil, usagef("run: --connect-timeout must be positive, got %v", cfg.connectTimeout)
	case cfg.grace < 0:
		return nil, usagef("run: --grace must not be negative, got %v", cfg.grace)
	}
	if !backendGiven {
		cfg.backend = getenv("BATON_BACKEND")
	}
	if strings.TrimSpace(cfg.backend) == "" {
		return nil, usagef("run: no backend: pass --backend URL or set BATON_BACKEND (the embedded sqlite default arrives with the SQL engine)")
	}
	return cfg, nil
}
