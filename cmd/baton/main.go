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
)

// version is set at link time (-ldflags "-X main.version=v1.2.3"); else the
// module version from the build info is used.
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

const runUsage = `Usage: baton run [flags] NAME -- COMMAND [ARG...]

Acquire the lock NAME (a mutex unless --read, --write or --shared), run
COMMAND, release when it exits, and exit with its status. Flags may come
before or after NAME; "--" starts COMMAND.

Flags:
  --backend URL          zk://h1:2181,h2:2181/chroot, etcd://h1:2379,h2:2379,
                         etcds://… (TLS), postgres://user@h:5432/db?sslmode=…
                         (or postgresql://), mysql://user:pass@h:3306/db?tls=…,
                         sqlite:///path/to/file.db (absolute; created 0600;
                         refused, exit 69, if it or its -wal/-shm is a link
                         you or root do not own, if planted by another user in
                         a shared directory, or if its directory is writable
                         by others without the sticky bit). Default
                         $BATON_BACKEND, else the embedded default: sqlite://
                         on the file locks.db (0600) in $XDG_STATE_HOME/baton
                         (else ~/.local/state/baton, created 0700; refused, exit
                         69, if a symbolic link, not yours, or writable by group
                         or others), so runs on one host exclude each other
                         with zero setup. redis://[user:pass@]h:6379[/db] and
                         rediss://… (TLS): a Redis primary (db= is its one
                         parameter; skip_verify is refused).
                         redlock://[user:pass@]h1:p1,h2:p2,h3:p3[?tls=true]:
                         Redlock on >= 3 independent servers, listed in the same
                         order by every client (mutex only; prefix= sets the
                         key prefix).
  --ttl D                session timeout (ZooKeeper; the server may clamp it),
                         lease TTL (etcd; rounded up to whole seconds) or the
                         renewed lease of the row or key (SQL, Redis, Redlock;
                         >= 300ms; whole milliseconds on Redis and Redlock,
                         else exit 64). At most 24h. Default 15s.
                         A waiter killed while it waits (SIGKILL, a crash:
                         it cannot withdraw) keeps its place until its TTL
                         runs out. On ZooKeeper and etcd its entry becomes
                         the holder when its turn comes and keeps the lock
                         from everyone for up to that TTL; on SQL (RW
                         locks, semaphores, elections) and Redis (RW locks)
                         it holds back the waiters queued after it as long.
                         A mutex waiter on SQL, Redis or Redlock blocks no
                         one (on Redis and Redlock the hand-off it was woken
                         for waits for the others' next poll, at most
                         TTL/2). Keep --ttl short where waiters may be
                         killed.
  --wait D               give up after D if the lock stays taken (exit 75).
                         A D shorter than --connect-timeout makes one attempt
                         first (bounded by --connect-timeout, not D), so a
                         free lock is granted whatever D; 0 makes that
                         attempt only; absent waits forever.
  --connect-timeout D    reach the backend within D or exit 69. Default 10s.
  --grace D              after the lock is lost: SIGTERM, then SIGKILL after D.
                         Default 5s.
  --on-suspend none|stop stop: SIGSTOP COMMAND while ownership is in doubt and
                         SIGCONT it when the session recovers. Default none.
  --read                 take the shared side of the read/write lock NAME:
                         readers share; a reader never overtakes a queued
                         writer.
  --write                take the exclusive side of the read/write lock NAME.
  --shared N             take one of N permits of the semaphore NAME (N >= 1;
                         every client of NAME must use the same N).
                         --read, --write and --shared exclude each other. A
                         mutex, a read/write lock and a semaphore are
                         different objects: give them different NAMEs.
  --min-hold D           keep the lock at least D after COMMAND started, even
                         if it ends sooner, so a job scheduled on many hosts
                         runs once per period (D <= 24h, <= --max-hold). A
                         loss or a signal to baton ends the wait early.
  --max-hold D           once COMMAND has run D: SIGTERM, SIGKILL after
                         --grace, exit 124.
  --quiet-busy           exit 75 silently when the lock is taken.
  --scrub-env            remove the credential variables from COMMAND's
                         environment (see below).
  --log-format text|json records on stderr as log/slog text, or one JSON
                         object a line (then notes and errors too).
                         Default text.
  --log-level L          debug, info, warn or error. warn (default): losses,
                         stale writes, failed releases; info adds acquired
                         (token, wait), command started (pid), command exited,
                         released, suspensions, grants after a wait and
                         leadership changes; debug every acquire event.
                         The backend URL is logged redacted.
Durations: 500ms, 15s, 2m, or a bare number of seconds.

COMMAND's environment adds BATON_LOCK (NAME without outer "/"), BATON_TOKEN
(the fencing token, decimal) and BATON_ENGINE (zk, etcd, postgres, mysql,
sqlite, redis or redlock), and sets BATON_BACKEND to the backend baton used
(the embedded default too), so a nested baton run finds it; a user and
password written in the URL are left out of it (--log-level info says so):
the nested run takes them from the variables below, which COMMAND inherits.
A BATON_BACKEND that is set but empty or blank exits 64. The embedded
default is named in one line on stderr when stderr is a terminal.
etcd credentials: user:pass@ in the URL or BATON_ETCD_USER /
BATON_ETCD_PASSWORD; TLS files: BATON_ETCD_CACERT, BATON_ETCD_CERT,
BATON_ETCD_KEY. SQL credentials: user:pass@ in the URL, else
BATON_SQL_USER / BATON_SQL_PASSWORD, else the driver's own (PGUSER,
PGPASSWORD, ~/.pgpass, PGSSLROOTCERT…; MYSQL_PWD). SQL TLS: sslmode=
(PostgreSQL), tls=true|false|skip-verify|preferred (MySQL; with tls=true,
BATON_SQL_CACERT, BATON_SQL_CERT and BATON_SQL_KEY give a private CA and a
client certificate). Towards a host that is not loopback (or a socket),
baton warns in one line before connecting when PostgreSQL's sslmode (else
PGSSLMODE, else prefer) is not verify-full, or MySQL's tls is not true; the
same goes for credentials given to zk://, etcd://, redis:// or redlock://
without TLS, and for ZooKeeper without digest auth (baton's entries then
carry the open ACL: any client may delete them). baton always sets
parseTime and interpolateParams on MySQL, and a busy timeout, WAL and
immediate transactions on SQLite.
Redis credentials (AUTH, ACL user): user:pass@ in the URL, else
BATON_REDIS_USERNAME / BATON_REDIS_PASSWORD; rediss:// TLS files:
BATON_REDIS_CACERT, BATON_REDIS_CERT, BATON_REDIS_KEY. Redlock uses the same
credentials and TLS files on every node; --read, --write, --shared and
baton elect exit 64 on it (Redlock has only the mutex).
Credentials are never printed. user:pass@ is percent-decoded for every
engine (%2F is '/'; a '%' that starts no escape is itself); '/', '?', '#'
and '@' may stand unescaped in it, as the userinfo ends at the first '@'
that hosts follow, and a query value (PostgreSQL's ?password=) may hold
'@' too; write %40 for an '@' in a path, and for a password's '@' that a
'?' or '#' follows. A password in --backend, in the userinfo or the query,
is readable by every user of the host (ps) and stays in shell history:
baton warns, once; prefer the variables above.

COMMAND inherits baton's environment whole — the credential variables above
included — with the BATON_* variables said above set, and baton's working
directory, stdin, stdout and stderr. --scrub-env removes from it the
variables whose value is a password (BATON_ZK_PASSWORD, BATON_ETCD_PASSWORD,
BATON_REDIS_PASSWORD, BATON_SQL_PASSWORD, PGPASSWORD, MYSQL_PWD,
REDISCLI_AUTH, ETCDCTL_PASSWORD, and ETCDCTL_USER, which may hold
user:password) and those naming a password or private-key file
(PGPASSFILE, PGSSLKEY, BATON_ETCD_KEY, BATON_REDIS_KEY, BATON_ZK_KEY,
BATON_SQL_KEY, ETCDCTL_KEY). User names and certificates stay; a nested
baton run then needs its password from elsewhere.

COMMAND runs in its own process group (it gets the terminal when stdin is
one) and dies with baton. SIGINT, SIGTERM and SIGHUP sent to baton go to
that group; baton then waits for COMMAND, releases and exits with its status.

run is fenced, not exclusive: when the lock is lost, COMMAND gets SIGTERM
and SIGKILL after --grace, but the next holder may already be running by
then. Pass BATON_TOKEN to the resource so it rejects the stale writer.

Exit codes:
  64  usage: bad flag or duration, --ttl <= 0, bad URL (a port outside
      1-65535 or a host that is no name or address included), invalid
      NAME, missing COMMAND, --read/--write/--shared combined, --shared < 1,
      --min-hold or --max-hold <= 0, --min-hold > --max-hold or 24h, a
      duration over its cap (--ttl 24h, --wait 7 days, --max-hold 30
      days, --grace and --connect-timeout 1h), a relative sqlite:// path,
      a set but blank BATON_BACKEND
  69  backend unreachable (at start, or the session died while waiting),
      or the embedded default's or a sqlite:// file or directory refused
  75  the lock stayed taken until --wait ran out
  76  the lock was lost while COMMAND ran (even if COMMAND then exited 0)
  77  authentication or TLS refused (PostgreSQL SQLSTATE 28000/28P01,
      MySQL error 1045…)
  124 COMMAND was ended by --max-hold (as timeout(1))
  126 COMMAND not executable; 127 COMMAND not found
  128+n COMMAND (or baton, while acquiring) killed by signal n
  otherwise COMMAND's own status
`

const electUsage = `Usage: baton elect [flags] NAME -- COMMAND [ARG...]

Campaign in the election NAME; once leader, run COMMAND; when COMMAND
exits, resign and exit with its status. Candidates queue (Curator's
LeaderLatch layout on ZooKeeper, etcdctl elect's on etcd): the first is the
leader, the next takes over when it resigns or its session dies.

COMMAND's environment adds BATON_EPOCH, the leadership's epoch (decimal,
strictly greater than every earlier leader's), and BATON_TOKEN equal to it,
beside BATON_LOCK (NAME) and BATON_ENGINE. Commit work with the epoch so a
deposed leader's late writes are rejected.

When leadership is lost (the session expired or the link stayed silent too
long), COMMAND gets SIGTERM, SIGKILL after --grace, and baton exits 76, as
baton run does: a new leader may already be running by then.

Flags and exit codes are those of baton run (see baton help run), without
--read, --write and --shared. On SQL (postgres://, mysql://, sqlite:// and
the embedded default) candidates wait in the order they came and the epoch
is the token of the leader's row. --wait bounds the campaign (75 when it runs
out), but an election without a leader is campaigned for at least
--connect-timeout; --wait 0 exits 75 at once when the election has a leader.
`

const inspectUsage = `Usage: baton inspect [flags] NAME

Print who holds and who waits for the lock, RW lock, semaphore or election
NAME, without taking part in it, in one table on every engine: the holders,
then the waiters in the order they will be served, then what lies under
NAME and takes no part (ROLE "other": a key no recipe wrote, a Redlock
owner on fewer than a majority of the nodes). Each row shows the mode
(mutex, read, write, permit, leader), the fencing token where the engine
can tell it from outside ("?" where not), the owner (on ZooKeeper and etcd
the entry, as baton clean names it), the host, pid and program of the
process that holds or waits as its grant recorded them ("-" for an entry
of an older baton or another program: baton run records COMMAND's name,
never its arguments or environment), the age and the lease's time left
where the engine keeps them, flags and a note. The flags: "duplicate" (a
protected create retried after a lost response left a second entry of one
attempt; the smallest is the real one), "dead" (no live session owns the
entry: nothing will remove it by itself; on SQL, a row whose lease expired
on the database clock, free to the next acquire) and "foreign" (not made
by a baton recipe; never removed). The engine's notes follow, as rows
"note". The report goes to stdout; diagnostics to stderr.

ZooKeeper: tokens are unknown from outside (a holder's token is the
directory's pzxid at its granting read); session liveness comes from the
server's "dump" four-letter word (4lw.commands.whitelist) and is reported
unknown without it. etcd: the token is the key's create revision; etcd
keeps no creation time, so age is unknown and the lease's time left is
shown. SQL (postgres://, mysql://, sqlite://, the embedded default): the
waiters come from the intent rows their retries refresh; one expires a TTL
after its client gave up. On SQLite, mutex waiters keep no row and are not
listed. inspect only reads: it does not create the schema (a database
never locked on shows nothing). Redis: the waiters are the intents that
waiting clients refresh at every attempt. Redlock: the holder is the owner
a majority of the nodes hold, its time left the time until fewer than a
majority hold it; a majority of the nodes must answer (else 69).

Flags:
  --backend URL          as for baton run (default $BATON_BACKEND, else the
                         embedded default)
  --connect-timeout D    reach the backend within D or exit 69. Default 10s.
  --json                 print one JSON document instead of the table: name,
                         engine, permits, holders, waiters, other, notes;
                         each entry with mode, token, owner, host, pid,
                         program, labels, age_ms, lease_left_ms, flags and
                         note (token, age_ms and lease_left_ms are null when
                         unknown)

Exit codes: 0 printed (also for an empty queue); 64 usage; 69 backend
unreachable; 77 authentication or TLS refused.
`

const cleanUsage = `Usage: baton clean [flags] NAME

Find the residue in NAME's queue and, with --apply, remove it — only what
is provably residue: protected-create duplicates (same "_c_<uuid>-" prefix,
same owning session, not the smallest) and entries no live session owns.
Entries of live sessions are never removed for looking old. Without
--apply nothing changes: baton prints what it would remove and why.

baton never removes the lock directory itself, nor anything outside it:
that would release the real holder and every waiter at once (they would
all enter together) and destroy the evidence of what happened.

A live holder can only be released by force, one exact entry at a time:
  baton clean --force-release ENTRY NAME           print the evidence and
                                                   the fence to raise
  baton clean --force-release ENTRY --apply NAME   save the evidence, then
                                                   delete ENTRY
ENTRY is the entry exactly as baton inspect prints it (its OWNER). The
holder is not told: its session lives on and it keeps writing until its
resource rejects it. So first raise the fence of every resource NAME
guards to the token printed (under an owner name of your own): the
(token, owner) rule then rejects the old holder and admits the next one,
whose token is larger.

clean is for the queue engines (ZooKeeper, etcd). On SQL, Redis and
Redlock it exits 64: they leave no residue, as their rows and keys expire
by themselves (a dead holder's within its --ttl; on SQL a release clears
the row's owner, and a row whose lease expired on the database clock is
free to the next acquire). baton inspect shows them.

Flags:
  --backend URL          as for baton run (default $BATON_BACKEND)
  --connect-timeout D    reach the backend within D or exit 69. Default 10s.
  --apply                remove; without it, a dry run
  --force-release ENTRY  release this one live entry (needs --apply to act)
  --evidence-dir DIR     where --force-release --apply saves its evidence
                         (default $XDG_STATE_HOME/baton, else
                         ~/.local/state/baton)

Exit codes: 0 done (or dry run printed); 64 usage, including a request to
remove the lock directory, and a SQL, Redis or Redlock backend; 66
--force-release names no entry of the queue; 69 backend unreachable; 73
the evidence could not be saved (nothing was removed); 77 authentication
or TLS refused.
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
		return runMain(rest)
	case "demo":
		if len(rest) > 0 {
			return fail(cli.Usagef("demo takes no arguments"))
		}
		return demoMain()
	case demoHolderCmd:
		return demoHolderMain(rest)
	case "drill":
		return drillMain(rest)
	case drillHolderCmd:
		return drillHolderMain(rest)
	case "help", "-h", "--help", "-help":
		return helpMain(rest)
	case "version", "--version":
		fmt.Fprintln(os.Stderr, "baton", buildVersion())
		return cli.ExitOK
	case "elect":
		return electMain(rest)
	case "inspect":
		return inspectMain(rest)
	case "clean":
		return cleanMain(rest)
	case "exporter":
		return exporterMain(rest)
	default:
		fmt.Fprintf(os.Stderr, "baton: unknown command %s\n\n", cli.Clip(cmd))
		fmt.Fprint(os.Stderr, mainUsage)
		return cli.ExitUsage
	}
}

// isHelpFlag reports whether arg asks for help, as package flag reads it.
func isHelpFlag(arg string) bool {
	return arg == "-h" || arg == "--help" || arg == "-help" || arg == "--h"
}

// usageOf returns the help of subcommand cmd, or "" when it has none.
func usageOf(cmd string) string {
	switch cmd {
	case "run":
		return runUsage
	case "elect":
		return electUsage
	case "inspect":
		return inspectUsage
	case "clean":
		return cleanUsage
	case "demo":
		return demoUsage
	case "exporter":
		return exporterUsage
	case "drill":
		return drillHelp()
	}
	return ""
}

// helpMain is baton help [COMMAND].
func helpMain(args []string) int {
	switch {
	case len(args) == 0:
		return env.ShowHelp(mainUsage)
	case len(args) > 1:
		return fail(cli.Usagef("help takes one COMMAND, got %d words", len(args)))
	case usageOf(args[0]) != "":
		return env.ShowHelp(usageOf(args[0]))
	}
	fmt.Fprintf(os.Stderr, "baton: no help for %s\n\n", cli.Clip(args[0]))
	fmt.Fprint(os.Stderr, mainUsage)
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

// env is the process's environment while the commands move out of
// package main.
var env = cli.OSEnv()

func fail(err error) int { return env.Fail(err) }

func note(format string, args ...any) { env.Note(format, args...) }
