// Package scenario holds the fault scenarios of `baton drill`: the same
// code runs against a user's deployment (cmd/baton builds a Target from a
// backend URL) and against baton's own test servers (drill's tests build a
// Target per engine). A scenario injects one fault — a holder paused past
// its TTL, killed, cut off, blackholed, slowed; a lost release response;
// waiters cancelled in bulk; a herd; a waiter's session expiring — while
// holders write to a fenced resource and to its unfenced twin, records the
// history and checks it with package drill's checkers.
//
// Every lock name a drill uses starts with Options.Prefix, so a drill
// never touches a user's lock, and everything a drill created is removed
// when it ends, also when its context is cancelled.
//
// # Holders in child processes
//
// A process can only be frozen (SIGSTOP) or killed (SIGKILL) from outside,
// so the paused, killed, cut, blackhole and slow scenarios run their
// holder in a child process: Target.Holder re-executes the running binary,
// whose main sees IsHolder and calls HolderMain. The child writes its
// history to its stdout on CLOCK_MONOTONIC, which the parent shares, and
// the parent merges it. The transport faults sit in fault proxies
// (package github.com/baton-go/baton/faultproxy), one per server of
// Target.Addrs, between the drill's own clients and the servers: the
// servers are never touched.
//
// # Stale writes
//
// The resource is a counter in a SQLite file under Options.Dir, twice:
// fenced (package fence rejects a token older than one it has served)
// and unfenced. After the fault, a holder that survived it sends the
// write it had decided on before — read+1 — without looking at its lease,
// as a paused process does. A write is counted stale when the resource
// accepted it although an operation under a newer token had already
// completed there: the fenced counter must count none, the unfenced twin
// counts the danger the fence removed. A scenario whose fault leaves such
// a write must see the unfenced twin accept it, or the fault was not
// exercised and the trial fails.
//
// This package and the packages it links import no test code: the CLI
// ships it.
package scenario

import (
	"context"
	"os/exec"
	"time"

	"github.com/baton-go/baton"
)

// Family says how an engine grants: a queue engine (ZooKeeper, etcd)
// enqueues every waiter on the server; a lease engine (SQL, Redis,
// Redlock) keeps only the holder's lease there.
type Family int

const (
	Queue Family = iota
	Lease
)

// Target is the deployment under drill, as the caller connects to it.
type Target struct {
	Engine string // "zk", "etcd", "redis", "redlock", "postgres", "mysql", "sqlite"
	Family Family
	// Addrs are the host:port of every server a client dials, in the
	// order Open's dial takes them; empty when the engine is embedded
	// (SQLite), and then the transport scenarios are skipped.
	Addrs []string
	// TTL is the session timeout or lease TTL the drill's clients use.
	TTL time.Duration
	// Open connects a client of its own (own session, own pool) whose
	// connection to Addrs[i] goes to dial[i] instead — a fault proxy's
	// address — or to Addrs when dial is nil.
	Open func(ctx context.Context, dial []string) (Client, error)
	// Holder returns the command of a holder child process: a re-exec of
	// the running binary with env set so that it calls HolderMain with
	// this Target; dial as for Open. Run appends the child's instructions
	// (lock name, counters, client id, dial list; see IsHolder) to the
	// command's Env (os.Environ() when Env is nil) and owns its stdin and
	// stdout; a nil Stderr is kept, and shown when the child fails.
	Holder func(dial []string) *exec.Cmd
	// Scan lists what is left on the servers under name: a queue's
	// entries, a lease's row or key. Orphans are counted with it.
	Scan func(ctx context.Context, name string) ([]string, error)
	// Clean, if set, removes what the engine keeps under prefix once
	// nothing holds or waits there: ZooKeeper's persistent lock
	// directories, a Redis engine's token counters. Run calls it once at
	// the end, also when cancelled, so that a drill leaves nothing
	// behind; nil when the engine keeps nothing (etcd deletes a lock's
	// keys with its last entry).
	Clean func(ctx context.Context, prefix string) error
}

// Client is one lock client of a drill.
type Client interface {
	Mutex(name string) (baton.Locker, error)
	Close() error
}

// Options says what Run runs.
type Options struct {
	Scenarios []string // names from Names(); nil runs all that apply
	Trials    int      // per scenario; >= 1
	Seed      uint64   // trial i of a scenario uses Seed+i
	Prefix    string   // every lock name starts with it
	Dir       string   // histories and the resource's database live here
	// Progress, if set, is called as trials start and end.
	Progress func(Progress)
	// Keep keeps every trial's history file and the counters' database;
	// by default only a failing trial's history is kept (Result.History),
	// the rest is removed.
	Keep bool
	// Herd is the number of waiters of the herd and cancel-bulk
	// scenarios; 0 means DefaultHerd.
	Herd int
}

// Progress is one step of a running drill.
type Progress struct {
	Scenario      string
	Trial, Trials int   // Trial counts from 0
	Done          bool  // the trial ended
	Err           error // its violations, when it failed
	Interrupted   bool  // ctx ended while it ran: no verdict (Result.Interrupted)
}

// Report is what a drill found.
type Report struct {
	Engine    string
	Seed      uint64
	Prefix    string
	Scenarios []Result
}

// Passed reports whether every scenario held its invariants.
func (r Report) Passed() bool {
	for _, s := range r.Scenarios {
		if !s.Passed {
			return false
		}
	}
	return true
}

// Result is one scenario on one engine, over its trials.
type Result struct {
	Name    string
	Engine  string
	Trials  int
	Skipped string // why the scenario does not apply; empty when it ran
	// FencedStaleAccepted counts stale writes the fenced resource
	// accepted (must be 0); UnfencedStaleAccepted those its unfenced twin
	// accepted: the danger the fence removed.
	FencedStaleAccepted   int
	UnfencedStaleAccepted int
	// NextGrant is, per trial, the time from the fault (a holder's pause,
	// kill or cut; a waiter's cut; the bulk cancel; the herd's plug
	// released) to the next grant of the lock to another client.
	NextGrant []time.Duration
	// LostLead is, per trial where the holder kept running through the
	// fault (cut, blackhole, slow), how long before the server-side
	// expiry the holder was told Lost. The expiry is taken as fault time
	// + TTL: the last renewal the server heard came before the fault, so
	// that is when it expired the lease at the latest, and LostLead is an
	// upper bound of the true lead (longer by the time from the last
	// renewal to the fault, at most a renewal interval). Negative: told
	// after that bound. Whether the holder was told before anyone else
	// was granted is checked as a violation (I7).
	LostLead   []time.Duration
	Orphans    int      // entries left after the trials, 3×TTL after each (must be 0)
	Violations []string // invariant violations, "I3: …"
	// Interrupted: ctx ended while the last trial (Trials-1) ran. That
	// trial has no verdict: what its checks found (a fault left half
	// done, a client stopped mid-write) says nothing of the lock, so its
	// violations are not counted and Passed is what the trials before it
	// make it.
	Interrupted bool
	History     string // path of the first failing trial's kept history (JSON lines, package drill's Event)
	Passed      bool
	Timelines   []Timeline // per trial, for reports
}

// Timeline is one trial as a report draws it; times are since its start.
type Timeline struct {
	Trial int
	Seed  uint64
	Spans []Span
	Marks []Mark
}

// Span is an interval of one client: Kind "held", "waited" or
// "suspended".
type Span struct {
	Client   string
	Kind     string
	From, To time.Duration
}

// Mark is a point event of one client: Kind "pause", "resume", "kill",
// "cut" (any transport fault: Detail says which), "heal", "cancel",
// "release", "lost", "write-ok", "write-refused" or "stale-accepted".
type Mark struct {
	Client string
	Kind   string
	At     time.Duration
	Detail string
}
