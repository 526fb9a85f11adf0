// Command baton runs a command under a distributed lock whose every grant
// carries a fencing token, and shows why that token matters.
//
//	baton run [flags] NAME -- COMMAND [ARG...]
//	baton elect [flags] NAME -- COMMAND [ARG...]
//	baton inspect [flags] NAME
//	baton clean [flags] NAME
//	baton exporter [flags] NAME|PREFIX...
//	baton demo
//	baton drill [flags]
//	baton help [COMMAND]
//	baton version
//
// baton is just another client of the public API. run, elect and demo
// write only to stderr, so COMMAND owns stdout. inspect and clean print
// their report (the data the operator asked for: a table, or JSON with
// --json) on stdout and their diagnostics on stderr, so the report can be
// piped or saved. See `baton help run` for the flags, the environment and
// the exit codes.
package main

import (
	"fmt"
	"os"
	"runtime/debug"

	"github.com/baton-go/baton/cmd/baton/internal/cli"
	"github.com/baton-go/baton/cmd/baton/internal/demo"
	"github.com/baton-go/baton/cmd/baton/internal/drill"
	"github.com/baton-go/baton/cmd/baton/internal/exporter"
	"github.com/baton-go/baton/cmd/baton/internal/inspect"
	"github.com/baton-go/baton/cmd/baton/internal/run"
)

// version is set at link time (-ldflags "-X main.version=v1.2.3"); else the
// module version from the build info is used. Nothing changes it at run
// time.
var version = ""

const mainUsage = `baton — distributed locks with fencing tokens

Usage:
  baton run [flags] NAME -- COMMAND [ARG...]
        run COMMAND while holding the lock NAME (a mutex; --read/--write:
        a read/write lock; --shared N: a semaphore permit)
  baton elect [flags] NAME -- COMMAND [ARG...]
        run COMMAND while leader of election NAME
  baton inspect [flags] NAME
        print NAME's queue (stdout; --json)
  baton clean [flags] NAME
        remove duplicates and dead entries (dry run unless --apply)
  baton exporter [flags] NAME|PREFIX...
        serve metrics and a live page of locks (default
        http://127.0.0.1:9187/)
  baton demo
        the paused-holder story on an embedded etcd
  baton drill [flags]
        run the fault matrix against a backend (its own lock names;
        cleans up after itself)
  baton help [COMMAND]
        this text, or a command's
  baton version
        print the version

Without --backend or $BATON_BACKEND, locks live in a SQLite file in the
user's state directory (~/.local/state/baton/locks.db): commands on one
host exclude each other with zero setup.

A lock grants coordination, not correctness: COMMAND gets BATON_TOKEN and
must hand it to the resource it writes, which rejects stale tokens.
`

func main() {
	os.Exit(dispatch(cli.OSEnv(), os.Args[1:]))
}

// dispatch runs one subcommand in env and returns the process exit code.
func dispatch(env *cli.Env, args []string) int {
	if len(args) == 0 {
		fmt.Fprint(env.Stderr, mainUsage)
		return cli.ExitUsage
	}
	cmd, rest := args[0], args[1:]
	if usageOf(cmd) != "" {
		env.SetTopic(cmd)
		if len(rest) > 0 && isHelpFlag(rest[0]) {
			// What every subcommand's flag parser would answer, on the
			// stream whoever asked for help reads.
			return env.ShowHelp(usageOf(cmd))
		}
	}
	switch cmd {
	case "run":
		return run.Run(env, rest)
	case "elect":
		return run.Elect(env, rest)
	case "inspect":
		return inspect.Inspect(env, rest)
	case "clean":
		return inspect.Clean(env, rest)
	case "exporter":
		return exporter.Main(env, rest)
	case "demo":
		if len(rest) > 0 {
			return env.Fail(cli.Usagef("demo takes no arguments"))
		}
		return demo.Main(env)
	case demo.HolderCmd:
		return demo.HolderMain(env, rest)
	case "drill":
		return drill.Main(env, rest)
	case drill.HolderCmd:
		return drill.HolderMain(env, rest)
	case "help", "-h", "--help", "-help":
		return helpMain(env, rest)
	case "version", "--version":
		fmt.Fprintln(env.Stderr, "baton", buildVersion())
		return cli.ExitOK
	}
	fmt.Fprintf(env.Stderr, "baton: unknown command %s\n\n", cli.Clip(cmd))
	fmt.Fprint(env.Stderr, mainUsage)
	return cli.ExitUsage
}

// isHelpFlag reports whether arg asks for help, as package flag reads it.
func isHelpFlag(arg string) bool {
	return arg == "-h" || arg == "--help" || arg == "-help" || arg == "--h"
}

// usageOf returns the help of subcommand cmd, or "" when it has none.
func usageOf(cmd string) string {
	switch cmd {
	case "run":
		return run.RunUsage
	case "elect":
		return run.ElectUsage
	case "inspect":
		return inspect.InspectUsage
	case "clean":
		return inspect.CleanUsage
	case "demo":
		return demo.Usage
	case "exporter":
		return exporter.Usage
	case "drill":
		return drill.Help()
	}
	return ""
}

// helpMain is baton help [COMMAND].
func helpMain(env *cli.Env, args []string) int {
	switch {
	case len(args) == 0:
		return env.ShowHelp(mainUsage)
	case len(args) > 1:
		return env.Fail(cli.Usagef("help takes one COMMAND, got %d words", len(args)))
	case usageOf(args[0]) != "":
		return env.ShowHelp(usageOf(args[0]))
	}
	fmt.Fprintf(env.Stderr, "baton: no help for %s\n\n", cli.Clip(args[0]))
	fmt.Fprint(env.Stderr, mainUsage)
	return cli.ExitUsage
}

func buildVersion() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}
