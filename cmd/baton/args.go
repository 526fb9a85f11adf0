package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/cmd/baton/internal/cli"
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
	// minSQLTTL is sqllock's smallest TTL: below it the renewal and
	// drift margins stop making sense.
	minSQLTTL = 300 * time.Millisecond
	// maxMinHold caps --min-hold: it spaces out runs of a scheduled job,
	// and a lock kept idle for more than a day after its command ended
	// is a typo (60h for 60m), not a schedule.
	maxMinHold = 24 * time.Hour
	// maxTTL caps --ttl: a holder silent for a day still keeping the
	// lock from every waiter is a typo (15h for 15s), and past 24.8 days
	// ZooKeeper's client overflows its int32 milliseconds.
	maxTTL = 24 * time.Hour
	// maxWait caps --wait (absent waits forever, for whoever means it).
	maxWait = 7 * 24 * time.Hour
	// maxMaxHold caps --max-hold: a ceiling on a job's run time.
	maxMaxHold = 30 * 24 * time.Hour
	// maxGrace and maxConnectTimeout cap --grace and --connect-timeout: an
	// hour of either is already far past any use.
	maxGrace          = time.Hour
	maxConnectTimeout = time.Hour
)

// runConfig is a parsed `baton run` command line.
type runConfig struct {
	backend        string         // --backend, else $BATON_BACKEND, else the embedded default
	backendArgv    bool           // backend came from --backend (the command line)
	embedded       bool           // backend is the embedded default (its directory is created)
	readOnly       bool           // inspect: do not create the SQL schema
	ttl            time.Duration  // --ttl
	wait           time.Duration  // --wait; meaningful only when waitSet
	waitSet        bool           // --wait given: absent means forever
	connectTimeout time.Duration  // --connect-timeout
	grace          time.Duration  // --grace
	stopOnSuspend  bool           // --on-suspend=stop
	minHold        time.Duration  // --min-hold: keep the lock this long after COMMAND started; 0 none
	maxHold        time.Duration  // --max-hold: end COMMAND once it held this long; 0 none
	quietBusy      bool           // --quiet-busy: exit 75 without a word
	scrubEnv       bool           // --scrub-env: COMMAND gets no credential variables
	logFormat      string         // --log-format: logText or logJSON
	logLevel       slog.Level     // --log-level
	observer       baton.Observer // run, elect: the engine's events as log records; nil elsewhere
	// tlsServerName, when set, is the name every TLS connection verifies
	// the server's certificate against, instead of the host it dials.
	// Only baton drill sets it: its clients dial the servers through
	// fault proxies on 127.0.0.1, and the certificates name the real hosts.
	tlsServerName string
	mode          lockMode // which side of which recipe (run only)
	permits       int      // N of --shared N
	name          string   // NAME as given
	command       []string // COMMAND and its arguments
	help          bool     // -h/--help: print usage, exit 0
}

// lockMode is the coordination object `run` takes: a mutex by default, a
// side of a read/write lock, or a semaphore's permit. They are different
// objects: use different names for them.
type lockMode int

const (
	modeMutex  lockMode = iota // plain run
	modeRead                   // --read: shared side of the RW lock NAME
	modeWrite                  // --write: exclusive side of the RW lock NAME
	modeShared                 // --shared N: one of N permits of the semaphore NAME
)

// parseRun parses `baton run` arguments (after the word "run"). Flags may
// come before or after NAME; the first "--" ends them and starts COMMAND,
// so COMMAND's own flags never reach baton.
func parseRun(args []string, getenv func(string) string) (*runConfig, error) {
	return parseHold("run", args, getenv)
}

// parseElect parses `baton elect` arguments: run's flags and rules, except
// that --read, --write and --shared have no meaning for an election.
func parseElect(args []string, getenv func(string) string) (*runConfig, error) {
	return parseHold("elect", args, getenv)
}

// parseHold parses the command line of `run` or `elect` (cmd), the two
// commands that hold something while COMMAND runs.
func parseHold(cmd string, args []string, getenv func(string) string) (*runConfig, error) {
	cfg := &runConfig{
		ttl:            defaultTTL,
		connectTimeout: defaultConnectTimeout,
		grace:          defaultGrace,
		logFormat:      logText,
		logLevel:       slog.LevelWarn,
	}
	hf := holdFlags{onSuspend: "none"}
	fs := hf.flagSet(cmd, cfg)
	own, command, sawDash := cli.SplitDash(args)
	positional, err := cli.ParseInterleaved(fs, own)
	if errors.Is(err, flag.ErrHelp) {
		cfg.help = true
		return cfg, nil
	}
	if err != nil {
		return nil, cli.Usagef("%s: %v", cmd, err)
	}
	if err := holdOperands(cmd, cfg, positional, command, sawDash); err != nil {
		return nil, err
	}
	if err := hf.apply(cmd, cfg); err != nil {
		return nil, err
	}
	if err := checkCommon(cmd, cfg); err != nil {
		return nil, err
	}
	switch {
	case cfg.waitSet && cfg.wait < 0:
		return nil, cli.Usagef("%s: --wait must not be negative, got %v", cmd, cfg.wait)
	case cfg.wait > maxWait:
		return nil, cli.Usagef("%s: --wait %v is over the %v cap (leave --wait out to wait forever)", cmd, cfg.wait, maxWait)
	case cfg.grace < 0:
		return nil, cli.Usagef("%s: --grace must not be negative, got %v", cmd, cfg.grace)
	case cfg.grace > maxGrace:
		return nil, cli.Usagef("%s: --grace %v is over the %v cap", cmd, cfg.grace, maxGrace)
	}
	if err := hf.checkHoldTimes(cmd, cfg); err != nil {
		return nil, err
	}
	if err := resolveBackend(cmd, cfg, hf.backendGiven, getenv); err != nil {
		return nil, err
	}
	if err := checkHold(cmd, cfg); err != nil {
		return nil, err
	}
	return cfg, nil
}

// holdFlags are the flags of run and elect that do not go straight into
// the runConfig: apply turns them into it once parsed.
type holdFlags struct {
	onSuspend    string
	read, write  bool
	shared       int
	sharedSet    bool
	backendGiven bool
	minHoldSet   bool
	maxHoldSet   bool
}

// flagSet declares run's and elect's flags, storing into cfg and hf.
func (hf *holdFlags) flagSet(cmd string, cfg *runConfig) *flag.FlagSet {
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Func("backend", "", func(s string) error { cfg.backend, hf.backendGiven = s, true; return nil })
	fs.Var(cli.DurationValue{D: &cfg.ttl}, "ttl", "")
	fs.Var(cli.DurationValue{D: &cfg.wait, Given: &cfg.waitSet}, "wait", "")
	fs.Var(cli.DurationValue{D: &cfg.connectTimeout}, "connect-timeout", "")
	fs.Var(cli.DurationValue{D: &cfg.grace}, "grace", "")
	fs.StringVar(&hf.onSuspend, "on-suspend", hf.onSuspend, "")
	fs.Var(cli.DurationValue{D: &cfg.minHold, Given: &hf.minHoldSet}, "min-hold", "")
	fs.Var(cli.DurationValue{D: &cfg.maxHold, Given: &hf.maxHoldSet}, "max-hold", "")
	fs.BoolVar(&cfg.quietBusy, "quiet-busy", false, "")
	fs.BoolVar(&cfg.scrubEnv, "scrub-env", false, "")
	fs.Func("log-format", "", func(s string) error {
		if s != logText && s != logJSON {
			return fmt.Errorf("--log-format %q: want text or json", s)
		}
		cfg.logFormat = s
		return nil
	})
	fs.Func("log-level", "", func(s string) (err error) {
		cfg.logLevel, err = parseLogLevel(s)
		return err
	})
	fs.BoolVar(&hf.read, "read", false, "")
	fs.BoolVar(&hf.write, "write", false, "")
	fs.Func("shared", "", func(v string) error {
		n, err := strconv.Atoi(v)
		if err != nil {
			return fmt.Errorf("--shared %q: want a number of permits", v)
		}
		hf.shared, hf.sharedSet = n, true
		return nil
	})
	return fs
}

// holdOperands checks that exactly NAME precedes "--" and a COMMAND
// follows it, and stores them in cfg.
func holdOperands(cmd string, cfg *runConfig, positional, command []string, sawDash bool) error {
	synopsis := fmt.Sprintf("baton %s [flags] NAME -- COMMAND [ARG...]", cmd)
	switch {
	case len(positional) == 0:
		return cli.Usagef("%s: missing NAME", cmd)
	case len(positional) > 1 && !sawDash:
		return cli.Usagef("%s: put -- between NAME and COMMAND (%s)", cmd, synopsis)
	case len(positional) > 1:
		return cli.Usagef("%s: unexpected %q before --: only NAME goes there", cmd, positional[1])
	case !sawDash || len(command) == 0:
		return cli.Usagef("%s: missing COMMAND (%s)", cmd, synopsis)
	}
	cfg.name, cfg.command = positional[0], command
	return nil
}

// apply sets cfg's lock mode from --read, --write and --shared (at most
// one, and only for run) and its suspension policy from --on-suspend.
func (hf *holdFlags) apply(cmd string, cfg *runConfig) error {
	picked := 0
	for _, on := range []bool{hf.read, hf.write, hf.sharedSet} {
		if on {
			picked++
		}
	}
	switch {
	case cmd != "run" && picked > 0:
		return cli.Usagef("%s: --read, --write and --shared are for baton run (an election has one leader)", cmd)
	case picked > 1:
		return cli.Usagef("%s: --read, --write and --shared exclude each other: a read/write lock and a semaphore are different objects", cmd)
	case hf.sharedSet && hf.shared < 1:
		return cli.Usagef("%s: --shared %d: a semaphore needs at least one permit", cmd, hf.shared)
	case hf.read:
		cfg.mode = modeRead
	case hf.write:
		cfg.mode = modeWrite
	case hf.sharedSet:
		cfg.mode, cfg.permits = modeShared, hf.shared
	}
	switch hf.onSuspend {
	case "none":
	case "stop":
		cfg.stopOnSuspend = true
	default:
		return cli.Usagef("%s: --on-suspend=%q: want none or stop", cmd, hf.onSuspend)
	}
	return nil
}

// checkHoldTimes validates --min-hold and --max-hold: each positive when
// given, the floor no later than the ceiling, each within its cap.
func (hf *holdFlags) checkHoldTimes(cmd string, cfg *runConfig) error {
	switch {
	case hf.minHoldSet && cfg.minHold <= 0:
		return cli.Usagef("%s: --min-hold must be positive, got %v", cmd, cfg.minHold)
	case hf.maxHoldSet && cfg.maxHold <= 0:
		return cli.Usagef("%s: --max-hold must be positive, got %v", cmd, cfg.maxHold)
	case cfg.minHold > maxMinHold:
		return cli.Usagef("%s: --min-hold %v is over the %v cap", cmd, cfg.minHold, maxMinHold)
	case cfg.maxHold > maxMaxHold:
		return cli.Usagef("%s: --max-hold %v is over the %v cap", cmd, cfg.maxHold, maxMaxHold)
	case hf.maxHoldSet && cfg.minHold > cfg.maxHold:
		return cli.Usagef("%s: --min-hold %v exceeds --max-hold %v", cmd, cfg.minHold, cfg.maxHold)
	}
	return nil
}

// checkCommon validates the flags every connecting command shares.
func checkCommon(cmd string, cfg *runConfig) error {
	switch {
	case cfg.ttl <= 0:
		return cli.Usagef("%s: --ttl must be positive, got %v", cmd, cfg.ttl)
	case cfg.ttl > maxTTL:
		return cli.Usagef("%s: --ttl %v is over the %v cap: a silent holder would keep the lock that long", cmd, cfg.ttl, maxTTL)
	case cfg.connectTimeout <= 0:
		return cli.Usagef("%s: --connect-timeout must be positive, got %v", cmd, cfg.connectTimeout)
	case cfg.connectTimeout > maxConnectTimeout:
		return cli.Usagef("%s: --connect-timeout %v is over the %v cap", cmd, cfg.connectTimeout, maxConnectTimeout)
	}
	return nil
}

// resolveBackend falls back to $BATON_BACKEND when --backend was not
// given, and to the embedded default (a SQLite file in the user's state
// directory) when neither names one. An explicitly empty --backend, or a
// BATON_BACKEND that is set but empty or blank, is a mistake (an
// unexpanded variable in a unit file, say), not a request for the default.
func resolveBackend(cmd string, cfg *runConfig, given bool, getenv func(string) string) error {
	if !given {
		cfg.backend = getenv("BATON_BACKEND")
	}
	if strings.TrimSpace(cfg.backend) != "" {
		cfg.backendArgv = given
		return nil
	}
	if given {
		return cli.Usagef("%s: --backend is empty", cmd)
	}
	if _, set := lookupEnv("BATON_BACKEND"); set || cfg.backend != "" {
		return cli.Usagef("%s: BATON_BACKEND is set but empty: name a backend, or unset it for the embedded default", cmd)
	}
	def, err := embeddedBackend()
	if err != nil {
		return cli.Usagef("%s: no --backend, no BATON_BACKEND, and no state directory for the embedded default: %v", cmd, err)
	}
	cfg.backend, cfg.embedded = def, true
	return nil
}

// lookupEnv tells an empty variable from an unset one.
var lookupEnv = os.LookupEnv

// noteEmbedded says, in one line, that the embedded default is in use,
// but only to a person: when stderr is a terminal. A cron job or a unit
// (stderr a pipe or the journal) stays quiet, as a run that went well
// must be; with --log-level info the "acquired" record names the backend
// anyway.
func noteEmbedded(cfg *runConfig) {
	if cfg.embedded && cli.IsTerminal(os.Stderr) {
		note("no --backend or BATON_BACKEND: using the embedded default %s (it excludes runs of this host only)", cfg.backend)
	}
}

// logFormatArg is the value of the last --log-format among baton's own
// arguments (before "--"), read without parsing them, so that a command
// line that does not parse still reports in the format it asked for.
func logFormatArg(args []string) string { return cli.FlagArg(args, "log-format") }

// backendArg is the value of the last --backend among baton's own
// arguments, read as logFormatArg reads --log-format: its password must
// stay out of a usage error's record.
func backendArg(args []string) string { return cli.FlagArg(args, "backend") }
