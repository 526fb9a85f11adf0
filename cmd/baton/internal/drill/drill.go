// Package drill is `baton drill`: the fault matrix of package
// drill/scenario run against a user's deployment through baton.Open, and
// its reports (a table, --json, and a self-contained --html page).
package drill

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/baton-go/baton/cmd/baton/internal/backend"
	"github.com/baton-go/baton/cmd/baton/internal/cli"
	"github.com/baton-go/baton/drill/scenario"
	"github.com/baton-go/baton/engine"
)

const usage = `Usage: baton drill [flags]

Run the fault matrix against a deployment: for each scenario, holders of a
lock on the backend write to a fenced resource and to its unfenced twin
(both in a SQLite file of the drill's own) while one fault is injected — a
holder paused past its TTL, killed, cut off, blackholed or slowed, a lost
release response, waiters cancelled in bulk, a herd, a waiter's session
expiring. Transport faults go through fault proxies the drill starts on
loopback in front of every server of the URL; they are skipped on SQLite.

The drill locks only names under its own random prefix, never a user's
lock, and removes everything it created when it ends, also when
interrupted (Ctrl-C). Progress goes to stderr; the summary table to
stdout: per scenario the trials, the stale writes the fenced resource
accepted (must be 0), those its unfenced twin accepted (the danger the
fence removed), the time from the fault to the next grant, how long before
the server-side expiry the holder was told Lost, and the entries left on
the servers (must be 0).

Flags:
  --backend URL          as for baton run (default $BATON_BACKEND, else the
                         embedded default)
  --scenarios LIST       comma-separated scenario names (default all):
                         ` + "%s" + `
  --trials N             trials per scenario (default 3)
  --seed S               seed of the first trial; trial i uses S+i (default
                         random, printed so a run can be replayed)
  --ttl D                session timeout or lease TTL of the drill's clients
                         (default 2s: a short TTL keeps the drill short;
                         raise it to your production TTL to drill that)
  --herd N               waiters of the herd and cancel-bulk scenarios
                         (default %d, at most %d: each waiter is an
                         acquire of its own, a queue entry on ZooKeeper
                         and etcd, and its own history to check)
  --prefix P             lock names start with P/<random>/ (default
                         baton-drill/<random>/)
  --json FILE            write the results as one JSON object to FILE
  --html FILE            write a self-contained report with a timeline per
                         trial to FILE (opens in a browser without network)
  --keep-dir DIR         where a failing trial's history is kept (default a
                         new directory under $TMPDIR)
  --connect-timeout D    reach the backend within D or exit 69. Default 10s.

Credentials come as for baton run (URL or environment) and reach the
drill's holder processes through their environment, never their argv.

Exit codes: 0 every invariant held; 1 one broke (the failing trial's
history is kept and its path printed); 64 usage, including a --json or
--html FILE that cannot be created (checked before the drill starts); 69
backend unreachable; 73 --json or --html could not be written at the end
all the same (a full disk); 77 authentication or TLS refused; 128+n
interrupted by signal n (after cleaning up).
`

// Defaults of `baton drill`.
const (
	// defaultDrillTTL keeps a drill short: every fault waits out about a
	// TTL. A deployment's own TTL can be drilled with --ttl.
	defaultDrillTTL    = 2 * time.Second
	defaultDrillTrials = 3
	// maxDrillHerd bounds --herd: every waiter is an acquire with its
	// goroutines, entry and events to check, and a herd beyond what a
	// host can hold drills the host, not the lock.
	maxDrillHerd = 64
	// exitDrillFailed: the drill ran and an invariant broke.
	exitDrillFailed = 1
	// HolderCmd is the hidden subcommand a drill re-executes itself
	// with for a holder process of its own, which it can really pause
	// (SIGSTOP) and kill (SIGKILL).
	HolderCmd = "__drill-holder"
)

// drillConfig is a parsed `baton drill` command line.
type drillConfig struct {
	backend.Config
	help      bool     // -h/--help: print usage, exit 0
	scenarios []string // nil: all
	trials    int
	seed      uint64
	prefix    string // the full prefix, random part included
	jsonFile  string
	htmlFile  string
	keepDir   string
	herd      int // waiters of herd and cancel-bulk; 0: the scenario's default
}

// parseDrill parses `baton drill` arguments; it takes no operands.
func parseDrill(env *cli.Env, args []string) (*drillConfig, error) {
	cfg := &drillConfig{
		Config: backend.Config{TTL: defaultDrillTTL, ConnectTimeout: backend.DefaultConnectTimeout},
		trials: defaultDrillTrials,
	}
	var df drillFlags
	fs := df.flagSet(cfg)
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		cfg.help = true
		return cfg, nil
	}
	if err != nil {
		return nil, cli.Usagef("drill: %v", err)
	}
	if fs.NArg() > 0 {
		return nil, cli.Usagef("drill: unexpected %q: drill takes flags only", fs.Arg(0))
	}
	if err := df.apply(cfg); err != nil {
		return nil, err
	}
	if err := checkDrillFiles(cfg); err != nil {
		return nil, err
	}
	if err := backend.CheckCommon("drill", &cfg.Config); err != nil {
		return nil, err
	}
	if err := backend.Resolve("drill", env, &cfg.Config, df.backendGiven); err != nil {
		return nil, err
	}
	if err := backend.Check(&cfg.Config); err != nil {
		return nil, err
	}
	if err := backend.CheckHold("run", &cfg.Config, backend.ModeMutex); err != nil { // the drill holds mutexes as run does
		return nil, err
	}
	return cfg, nil
}

// drillFlags are the flags of drill that do not go straight into the
// drillConfig: apply turns them into it once parsed.
type drillFlags struct {
	backendGiven, seedSet bool
	scenarios, prefix     string
}

// flagSet declares drill's flags, storing into cfg and df.
func (df *drillFlags) flagSet(cfg *drillConfig) *flag.FlagSet {
	fs := flag.NewFlagSet("drill", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Func("backend", "", func(s string) error { cfg.Backend, df.backendGiven = s, true; return nil })
	fs.StringVar(&df.scenarios, "scenarios", "", "")
	fs.IntVar(&cfg.trials, "trials", cfg.trials, "")
	fs.Func("seed", "", func(s string) (err error) {
		cfg.seed, err = strconv.ParseUint(s, 10, 64)
		df.seedSet = err == nil
		return err
	})
	fs.Var(cli.DurationValue{D: &cfg.TTL}, "ttl", "")
	fs.StringVar(&df.prefix, "prefix", "baton-drill", "")
	fs.StringVar(&cfg.jsonFile, "json", "", "")
	fs.StringVar(&cfg.htmlFile, "html", "", "")
	fs.StringVar(&cfg.keepDir, "keep-dir", "", "")
	fs.IntVar(&cfg.herd, "herd", scenario.DefaultHerd, "")
	fs.Var(cli.DurationValue{D: &cfg.ConnectTimeout}, "connect-timeout", "")
	return fs
}

// apply checks the scenarios, trials and herd, and sets cfg's scenarios,
// seed (random when not given) and prefix (with its random segment).
func (df *drillFlags) apply(cfg *drillConfig) error {
	var err error
	if cfg.scenarios, err = parseScenarios(df.scenarios); err != nil {
		return err
	}
	if cfg.trials < 1 {
		return cli.Usagef("drill: --trials %d: want at least 1", cfg.trials)
	}
	if cfg.herd < 1 || cfg.herd > maxDrillHerd {
		return cli.Usagef("drill: --herd %d: want 1 to %d waiters", cfg.herd, maxDrillHerd)
	}
	if !df.seedSet {
		cfg.seed = randomSeed()
	}
	cfg.prefix, err = drillPrefix(df.prefix)
	return err
}

// parseScenarios checks a --scenarios list against the scenarios there
// are; empty means all of them (nil).
func parseScenarios(list string) ([]string, error) {
	if strings.TrimSpace(list) == "" {
		return nil, nil
	}
	known := scenario.Names()
	var out []string
	for _, s := range strings.Split(list, ",") {
		s = strings.TrimSpace(s)
		if !slices.Contains(known, s) {
			return nil, cli.Usagef("drill: unknown scenario %q (%s)", s, strings.Join(known, ", "))
		}
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out, nil
}

// drillPrefix returns p followed by a random segment, so that a drill's
// names never meet a user's lock nor another drill's, whatever p is.
func drillPrefix(p string) (string, error) {
	p = strings.Trim(p, "/")
	if p == "" {
		return "", cli.Usagef("drill: --prefix is empty")
	}
	full := p + "/" + engine.NewOwnerID()[:12]
	if _, err := engine.ValidateName(full + "/x"); err != nil {
		return "", cli.Usagef("drill: --prefix %q: %v", p, err)
	}
	return full, nil
}

// randomSeed picks the seed of a run nobody asked to replay.
func randomSeed() uint64 {
	var b [8]byte
	_, _ = rand.Read(b[:])                       // crypto/rand.Read never fails (Go 1.24+)
	return binary.LittleEndian.Uint64(b[:]) >> 1 // fits a JSON number users paste back
}

// Help is the help of `baton drill`, with the scenarios of this build,
// wrapped.
func Help() string {
	var lines []string
	line := ""
	for i, n := range scenario.Names() {
		if i > 0 {
			line += ", "
		}
		if len(line)+len(n) > 50 {
			lines = append(lines, strings.TrimRight(line, " "))
			line = ""
		}
		line += n
	}
	lines = append(lines, line)
	return fmt.Sprintf(usage, strings.Join(lines, "\n"+strings.Repeat(" ", 25)), scenario.DefaultHerd, maxDrillHerd)
}

// Main is `baton drill`.
func Main(env *cli.Env, args []string) int {
	cfg, err := parseDrill(env, args)
	if err != nil {
		return env.Fail(err)
	}
	if cfg.help {
		return env.ShowHelp(Help())
	}
	ctx, stop := signal.NotifyContext(context.Background(), cli.Signals()...)
	defer stop()
	t, closeTarget, err := drillTarget(ctx, env, cfg)
	if err != nil {
		return env.FailConnected(ctx, err)
	}
	defer closeTarget()
	dir, err := drillDir(cfg.keepDir)
	if err != nil {
		return env.Fail(err)
	}
	prog := newProgress(env.Stderr)
	prog.start(t.Engine, cfg)
	rep, runErr := scenario.Run(ctx, t, scenario.Options{
		Scenarios: cfg.scenarios, Trials: cfg.trials, Seed: cfg.seed, Prefix: cfg.prefix, Dir: dir,
		Herd: cfg.herd, Progress: prog.step,
	})
	prog.end()
	return drillFinish(ctx, env, cfg, rep, runErr, dir)
}

// drillFinish prints and saves what a drill found and picks its exit code.
func drillFinish(ctx context.Context, env *cli.Env, cfg *drillConfig, rep scenario.Report, runErr error, dir string) int {
	if len(rep.Scenarios) > 0 {
		if err := writeDrillTable(env.Stdout, rep); err != nil {
			env.Note("write: %v", err)
		}
	}
	code := cli.ExitOK
	if err := saveDrillFiles(cfg, rep); err != nil {
		env.Note("%v", err)
		code = cli.ExitCantCreate
	}
	kept := false
	for _, s := range rep.Scenarios {
		if !s.Passed && s.Skipped == "" {
			env.Note("drill: %s broke: %s", s.Name, strings.Join(s.Violations, "; "))
			if s.History != "" {
				env.Note("drill: the failing history is kept in %s", s.History)
				kept = true
			}
		}
	}
	if !kept && cfg.keepDir == "" {
		_ = os.RemoveAll(dir) // nothing failed in it: passing histories are not kept
	}
	switch {
	case errors.Is(runErr, scenario.ErrOptions):
		code = cli.ExitUsage
		env.Note("drill: %v", runErr)
	case runErr != nil:
		code = cli.Classify(ctx, runErr, false)
		if ctx.Err() != nil {
			env.Note("drill interrupted: cleaned up what it created under %s", cfg.prefix)
		} else {
			env.Note("drill: %v", runErr)
		}
	case !rep.Passed():
		code = exitDrillFailed
	}
	return code
}

// drillDir returns the directory of the drill's resource and histories:
// keep (created when missing) or a new one under $TMPDIR.
func drillDir(keep string) (string, error) {
	if keep != "" {
		if err := os.MkdirAll(keep, 0o700); err != nil {
			return "", fmt.Errorf("--keep-dir: %w", err)
		}
		return keep, nil
	}
	return os.MkdirTemp("", "baton-drill-")
}
