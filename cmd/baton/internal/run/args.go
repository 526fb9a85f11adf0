package run

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"time"

	"github.com/baton-go/baton/cmd/baton/internal/backend"
	"github.com/baton-go/baton/cmd/baton/internal/cli"
)

// Defaults and caps of `baton run` and `baton elect`; the TTL's and the
// connect timeout's are package backend's.
const (
	// defaultGrace is how long a command may clean up after SIGTERM when
	// the lock was lost, before SIGKILL.
	defaultGrace = 5 * time.Second
	// maxMinHold caps --min-hold: it spaces out runs of a scheduled job,
	// and a lock kept idle for more than a day after its command ended
	// is a typo (60h for 60m), not a schedule.
	maxMinHold = 24 * time.Hour
	// maxWait caps --wait (absent waits forever, for whoever means it).
	maxWait = 7 * 24 * time.Hour
	// maxMaxHold caps --max-hold: a ceiling on a job's run time.
	maxMaxHold = 30 * 24 * time.Hour
	// maxGrace caps --grace: an hour is already far past any use.
	maxGrace = time.Hour
)

// config is a parsed `baton run` or `baton elect` command line.
type config struct {
	backend.Config               // --backend, --ttl, --connect-timeout; Program is COMMAND's
	wait           time.Duration // --wait; meaningful only when waitSet
	waitSet        bool          // --wait given: absent means forever
	grace          time.Duration // --grace
	stopOnSuspend  bool          // --on-suspend=stop
	minHold        time.Duration // --min-hold: keep the lock this long after COMMAND started; 0 none
	maxHold        time.Duration // --max-hold: end COMMAND once it held this long; 0 none
	quietBusy      bool          // --quiet-busy: exit 75 without a word
	scrubEnv       bool          // --scrub-env: COMMAND gets no credential variables
	logFormat      string        // --log-format: logText or logJSON
	logLevel       slog.Level    // --log-level
	mode           backend.Mode  // which side of which recipe (run only)
	permits        int           // N of --shared N
	name           string        // NAME as given
	command        []string      // COMMAND and its arguments
	help           bool          // -h/--help: print usage, exit 0
}

// parseRun parses `baton run` arguments (after the word "run"). Flags may
// come before or after NAME; the first "--" ends them and starts COMMAND,
// so COMMAND's own flags never reach baton.
func parseRun(env *cli.Env, args []string) (*config, error) {
	return parseHold(env, "run", args)
}

// parseElect parses `baton elect` arguments: run's flags and rules, except
// that --read, --write and --shared have no meaning for an election.
func parseElect(env *cli.Env, args []string) (*config, error) {
	return parseHold(env, "elect", args)
}

// parseHold parses the command line of `run` or `elect` (cmd), the two
// commands that hold something while COMMAND runs.
func parseHold(env *cli.Env, cmd string, args []string) (*config, error) {
	cfg := &config{
		Config:    backend.Config{TTL: backend.DefaultTTL, ConnectTimeout: backend.DefaultConnectTimeout},
		grace:     defaultGrace,
		logFormat: logText,
		logLevel:  slog.LevelWarn,
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
	if err := backend.CheckCommon(cmd, &cfg.Config); err != nil {
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
	if err := backend.Resolve(cmd, env, &cfg.Config, hf.backendGiven); err != nil {
		return nil, err
	}
	if err := backend.CheckHold(cmd, &cfg.Config, cfg.mode); err != nil {
		return nil, err
	}
	return cfg, nil
}

// holdFlags are the flags of run and elect that do not go straight into
// the config: apply turns them into it once parsed.
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
func (hf *holdFlags) flagSet(cmd string, cfg *config) *flag.FlagSet {
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Func("backend", "", func(s string) error { cfg.Backend, hf.backendGiven = s, true; return nil })
	fs.Var(cli.DurationValue{D: &cfg.TTL}, "ttl", "")
	fs.Var(cli.DurationValue{D: &cfg.wait, Given: &cfg.waitSet}, "wait", "")
	fs.Var(cli.DurationValue{D: &cfg.ConnectTimeout}, "connect-timeout", "")
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
func holdOperands(cmd string, cfg *config, positional, command []string, sawDash bool) error {
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
	cfg.name, cfg.command, cfg.Program = positional[0], command, command[0]
	return nil
}

// apply sets cfg's lock mode from --read, --write and --shared (at most
// one, and only for run) and its suspension policy from --on-suspend.
func (hf *holdFlags) apply(cmd string, cfg *config) error {
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
		cfg.mode = backend.ModeRead
	case hf.write:
		cfg.mode = backend.ModeWrite
	case hf.sharedSet:
		cfg.mode, cfg.permits = backend.ModeShared, hf.shared
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
func (hf *holdFlags) checkHoldTimes(cmd string, cfg *config) error {
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

// logFormatArg is the value of the last --log-format among baton's own
// arguments (before "--"), read without parsing them, so that a command
// line that does not parse still reports in the format it asked for.
func logFormatArg(args []string) string { return cli.FlagArg(args, "log-format") }

// backendArg is the value of the last --backend among baton's own
// arguments, read as logFormatArg reads --log-format: its password must
// stay out of a usage error's record.
func backendArg(args []string) string { return cli.FlagArg(args, "backend") }
