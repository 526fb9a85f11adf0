package run

// RunUsage is the help of `baton run`.
const RunUsage = `Usage: baton run [flags] NAME -- COMMAND [ARG...]

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
                         k8s://?kubeconfig=PATH[&context=C][&namespace=NS]:
                         Leases in the context's namespace (k8s:// alone: the
                         pod's service account and namespace).
                         k8s://h:port?kubeconfig=… dials the kubeconfig's
                         apiserver at h:port (a proxy, a tunnel), its
                         certificate still checked against the kubeconfig's
                         server name.
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
sqlite, redis, redlock or kube), and sets BATON_BACKEND to the backend baton
used (the embedded default too), so a nested baton run finds it; a user and
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

// ElectUsage is the help of `baton elect`.
const ElectUsage = `Usage: baton elect [flags] NAME -- COMMAND [ARG...]

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
