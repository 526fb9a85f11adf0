// Command baton runs a command under a distributed lock whose every grant
// carries a fencing token, and shows why that token matters.
//
//	baton run [flags] NAME -- COMMAND [ARG...]
//	baton demo
//	baton help [COMMAND]
//	baton version
//
// baton is just another client of the public API. It writes only to
// stderr, so COMMAND owns stdout. See `baton help run` for the flags, the
// environment and the exit codes.
package main

import (
	"fmt"
	"io"
	"os"
	"runtime/debug"
)

// version is set at link time (-ldflags "-X main.version=v1.2.3"); else the
// module version from the build info is used.
var version = ""

const mainUsage = `baton — distributed locks with fencing tokens

Usage:
  baton run [flags] NAME -- COMMAND [ARG...]   run COMMAND while holding the mutex NAME
  baton demo                                   the paused-holder story on an embedded etcd
  baton help [COMMAND]                         this text, or a command's
  baton version                                print the version

Not in this release (exit 64): baton elect, baton inspect, baton clean.

A lock grants coordination, not correctness: COMMAND gets BATON_TOKEN and
must hand it to the resource it writes, which rejects stale tokens.
`

const runUsage = `Usage: baton run [flags] NAME -- COMMAND [ARG...]

Acquire the mutex NAME, run COMMAND, release when it exits, and exit with
its status. Flags may come before or after NAME; "--" starts COMMAND.

Flags:
  --backend URL          zk://h1:2181,h2:2181/chroot, etcd://h1:2379,h2:2379 or
                         etcds://… (TLS); default $BATON_BACKEND. redis, rediss,
                         redlock, postgres, mysql and sqlite URLs arrive with
                         their engines (exit 64 until then).
  --ttl D                session timeout (ZooKeeper; the server may clamp it) or
                         lease TTL (etcd; rounded up to whole seconds). Default 15s.
  --wait D               give up after D if the lock stays taken (exit 75);
                         0 makes one attempt; absent waits forever.
  --connect-timeout D    reach the backend within D or exit 69. Default 10s.
  --grace D              after the lock is lost: SIGTERM, then SIGKILL after D.
                         Default 5s.
  --on-suspend none|stop stop: SIGSTOP COMMAND while ownership is in doubt and
                         SIGCONT it when the session recovers. Default none.
  --read, --write, --shared N
                         reserved for the read/write lock and the semaphore of a
                         later release (exit 64 now).
Durations: 500ms, 15s, 2m, or a bare number of seconds.

COMMAND's environment adds BATON_LOCK (NAME without outer "/"), BATON_TOKEN
(the fencing token, decimal) and BATON_ENGINE (zk or etcd); BATON_BACKEND is
inherited, so a nested baton run works. etcd credentials: user:pass@ in the
URL or BATON_ETCD_USER / BATON_ETCD_PASSWORD; TLS files: BATON_ETCD_CACERT,
BATON_ETCD_CERT, BATON_ETCD_KEY. Credentials are never printed.

COMMAND runs in its own process group (it gets the terminal when stdin is
one) and dies with baton. SIGINT, SIGTERM and SIGHUP sent to baton go to
that group; baton then waits for COMMAND, releases and exits with its status.

run is fenced, not exclusive: when the lock is lost, COMMAND gets SIGTERM
and SIGKILL after --grace, but the next holder may already be running by
then. Pass BATON_TOKEN to the resource so it rejects the stale writer.

Exit codes:
  64  usage: bad flag or duration, --ttl <= 0, bad URL, invalid NAME,
      missing COMMAND, feature not in this release
  69  backend unreachable (at start, or the session died while waiting)
  75  the lock stayed taken until --wait ran out
  76  the lock was lost while COMMAND ran (even if COMMAND then exited 0)
  77  authentication or TLS refused
  126 COMMAND not executable; 127 COMMAND not found
  128+n COMMAND (or baton, while acquiring) killed by signal n
  otherwise COMMAND's own status
`

const demoUsage = `Usage: baton demo

Starts an embedded etcd on free loopback ports and plays the story of the
paused lock holder: A, B and C queue on one lock (TTL 2s); A is stopped
(SIGSTOP) past its lease; B is granted with a higher token and writes; A
resumes, learns it lost the lock, and its late write is rejected by the
fenced store while an unfenced twin accepts it and loses B's update; C is
granted last. Exits 0 when the story happened as it must, 1 when it did not.
`

func main() {
	os.Exit(dispatch(os.Args[1:]))
}

// dispatch runs one subcommand and returns the process exit code.
func dispatch(args []string) int {
	if len(args) == 0 {
		fmt.Fprint(os.Stderr, mainUsage)
		return exitUsage
	}
	switch cmd, rest := args[0], args[1:]; cmd {
	case "run":
		return runMain(rest)
	case "demo":
		if len(rest) > 0 && (rest[0] == "-h" || rest[0] == "--help" || rest[0] == "-help") {
			fmt.Fprint(os.Stderr, demoUsage)
			return exitOK
		}
		if len(rest) > 0 {
			return fail(usagef("demo takes no arguments"))
		}
		return demoMain()
	case demoHolderCmd:
		return demoHolderMain(rest)
	case "help", "-h", "--help", "-help":
		return helpMain(os.Stderr, rest)
	case "version", "--version":
		fmt.Fprintln(os.Stderr, "baton", buildVersion())
		return exitOK
	case "elect", "inspect", "clean":
		return fail(usagef("%s is not implemented in this release (it arrives with a later one); see `baton help`", cmd))
	default:
		fmt.Fprintf(os.Stderr, "baton: unknown command %q\n\n", cmd)
		fmt.Fprint(os.Stderr, mainUsage)
		return exitUsage
	}
}

func helpMain(w io.Writer, args []string) int {
	if len(args) == 0 {
		fmt.Fprint(w, mainUsage)
		return exitOK
	}
	switch args[0] {
	case "run":
		fmt.Fprint(w, runUsage)
	case "demo":
		fmt.Fprint(w, demoUsage)
	default:
		fmt.Fprintf(w, "baton: no help for %q\n", args[0])
		return exitUsage
	}
	return exitOK
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

// fail prints err and returns its exit code. Usage errors point at help.
func fail(err error) int {
	fmt.Fprintf(os.Stderr, "baton: %v\n", err)
	code := classify(noSignal, err, false)
	if code == exitUsage {
		fmt.Fprintln(os.Stderr, "Run 'baton help' or 'baton help run' for usage.")
	}
	return code
}

// note prints one short state line on stderr.
func note(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "baton: "+format+"\n", args...)
}
