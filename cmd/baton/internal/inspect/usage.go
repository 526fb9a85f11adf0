package inspect

// InspectUsage is the help of `baton inspect`.
const InspectUsage = `Usage: baton inspect [flags] NAME

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

// CleanUsage is the help of `baton clean`.
const CleanUsage = `Usage: baton clean [flags] NAME

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
free to the next acquire). baton inspect shows them. So it does on
Kubernetes (k8s://), whose holders and waiters on a Lease expire alike.

Flags:
  --backend URL          as for baton run (default $BATON_BACKEND)
  --connect-timeout D    reach the backend within D or exit 69. Default 10s.
  --apply                remove; without it, a dry run
  --force-release ENTRY  release this one live entry (needs --apply to act)
  --evidence-dir DIR     where --force-release --apply saves its evidence
                         (default $XDG_STATE_HOME/baton, else
                         ~/.local/state/baton)

Exit codes: 0 done (or dry run printed); 64 usage, including a request to
remove the lock directory, and a SQL, Redis, Redlock or Kubernetes
backend; 66 --force-release names no entry of the queue; 69 backend
unreachable; 73 the evidence could not be saved (nothing was removed); 77
authentication or TLS refused.
`
