package inspect

import (
	"context"
	"errors"
	"flag"
	"io"
	"os/signal"

	"github.com/baton-go/baton/cmd/baton/internal/backend"
	"github.com/baton-go/baton/cmd/baton/internal/cli"
	"github.com/baton-go/baton/engine"
)

// adminConfig is a parsed `baton inspect` or `baton clean` command line.
type adminConfig struct {
	backend.Config        // --backend, --connect-timeout
	name           string // NAME as given
	help           bool   // -h/--help: print usage, exit 0
	json           bool   // inspect --json
	apply          bool   // clean --apply
	forceRelease   string // clean --force-release ENTRY
	forceSet       bool
	evidenceDir    string // clean --evidence-dir
}

// parseAdmin parses `inspect` or `clean` (cmd) arguments: flags before or
// after the one NAME.
func parseAdmin(env *cli.Env, cmd string, args []string) (*adminConfig, error) {
	cfg := &adminConfig{Config: backend.Config{TTL: backend.DefaultTTL, ConnectTimeout: backend.DefaultConnectTimeout}}
	backendGiven := false
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Func("backend", "", func(s string) error { cfg.Backend, backendGiven = s, true; return nil })
	fs.Var(cli.DurationValue{D: &cfg.ConnectTimeout}, "connect-timeout", "")
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
	if err := backend.CheckCommon(cmd, &cfg.Config); err != nil {
		return nil, err
	}
	if err := backend.Resolve(cmd, env, &cfg.Config, backendGiven); err != nil {
		return nil, err
	}
	if cmd == "clean" {
		if err := backend.CheckClean(&cfg.Config); err != nil {
			return nil, err
		}
	}
	cfg.ReadOnly = cmd == "inspect"
	return cfg, nil
}

// adminSession is a connected inspect or clean: the backend, the
// normalised name, and the signal context.
type adminSession struct {
	env  *cli.Env
	cfg  *adminConfig
	name string
	b    *backend.Backend
	ctx  context.Context
	stop func()
}

// openAdmin parses, validates and connects for inspect or clean. A
// non-negative code means the command is over with that exit code.
func openAdmin(env *cli.Env, cmd, usage string, args []string) (*adminSession, int) {
	cfg, err := parseAdmin(env, cmd, args)
	if err != nil {
		return nil, env.Fail(err)
	}
	if cfg.help {
		return nil, env.ShowHelp(usage)
	}
	name, err := engine.ValidateName(cfg.name)
	if err != nil {
		return nil, env.Fail(err)
	}
	if cfg.forceSet {
		if err := refuseDirectory(name, cfg.forceRelease); err != nil {
			return nil, env.Fail(err)
		}
	}
	if err := backend.Check(&cfg.Config); err != nil {
		return nil, env.Fail(err)
	}
	backend.NoteEmbedded(env, &cfg.Config)
	ctx, stop := signal.NotifyContext(context.Background(), cli.Signals()...)
	b, err := backend.Open(ctx, env, &cfg.Config, name)
	if err != nil {
		code := env.FailConnected(ctx, err)
		stop()
		return nil, code
	}
	return &adminSession{env: env, cfg: cfg, name: name, b: b, ctx: ctx, stop: stop}, -1
}

func (a *adminSession) close() {
	a.b.Close()
	a.stop()
}
