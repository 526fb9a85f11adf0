package scenario

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/drill"
	"github.com/baton-go/baton/fence"
)

// The environment of a holder child: the parent appends these to
// Target.Holder's command.
const (
	envHolder = "BATON_SCENARIO_HOLDER" // the scenario; set means "be a holder"
	envName   = "BATON_SCENARIO_NAME"   // the lock name
	envDB     = "BATON_SCENARIO_DB"     // the SQLite file of the counters
	envRes    = "BATON_SCENARIO_RES"    // the counters' names: fenced,unfenced
	envClient = "BATON_SCENARIO_CLIENT" // the client id in the history
	envDial   = "BATON_SCENARIO_DIAL"   // the addresses to dial, comma-separated; empty: the servers
	envTTL    = "BATON_SCENARIO_TTL"    // the target's TTL, bounding the holder's waits
)

// Ops a holder child adds to its history besides the checkers' ops.
const (
	opError = "error" // Info: the child failed; Detail says why
	opReady = "ready" // Info: holding, counters read, waiting for "go"
	opExit  = "exit"  // Info: the child is done
)

// IsHolder reports whether this process was started by Run as a holder
// child. A program that builds Targets (the CLI, a test binary) checks it
// first thing in main (TestMain) and then exits with HolderMain's code.
func IsHolder() bool { return os.Getenv(envHolder) != "" }

// HolderMain is a holder child process: it opens a client of t (through
// the dial list its parent gave it), takes the lock, increments both
// counters, reads them once more — the write it decides on — reports
// "ready" and blocks on stdin. On "go" it writes read+1 to both counters
// without looking at its lease — the write a paused or cut-off process
// had already decided on — then waits for its lease to end (Lost, in the
// scenarios that send "go") or 3×TTL, releases and exits. When its stdin
// closes it releases and exits at once: the parent is stopping. Its
// history goes to stdout as JSON lines, on the clock the parent shares.
func HolderMain(t Target) int {
	rec := drill.NewRecorder(os.Stdout)
	client, name := os.Getenv(envClient), os.Getenv(envName)
	fail := func(what string, err error) int {
		rec.Info(client, opError, name, what+": "+err.Error())
		return 2
	}
	if d, err := time.ParseDuration(os.Getenv(envTTL)); err == nil && d > 0 {
		t.TTL = d
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	lines, eof := make(chan string, 1), make(chan struct{})
	go func() { // owner: the process; ends at stdin's EOF (the parent closes it)
		defer close(eof)
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			select {
			case lines <- strings.TrimSpace(sc.Text()):
			default: // one line is all a holder is told
			}
		}
	}()

	var dial []string
	if s := os.Getenv(envDial); s != "" {
		dial = strings.Split(s, ",")
	}
	c, err := t.Open(ctx, dial)
	if err != nil {
		return fail("open", err)
	}
	defer c.Close()
	m, err := c.Mutex(name)
	if err != nil {
		return fail("mutex", err)
	}
	fName, uName, _ := strings.Cut(os.Getenv(envRes), ",")
	db, err := drill.OpenSQLite(os.Getenv(envDB))
	if err != nil {
		return fail("resource", err)
	}
	defer db.Close()
	fc := drill.OpenCounter(db, fence.SQLite, fName, true)
	uc := drill.OpenCounter(db, fence.SQLite, uName, false)

	// The lock is taken with a context that ends with stdin: a parent
	// that stops while the child waits must not leave it waiting.
	lctx, lcancel := context.WithCancel(ctx)
	defer lcancel()
	go func() { // owner: the process; ends with lctx or stdin
		select {
		case <-lctx.Done():
		case <-eof:
			lcancel()
		}
	}()
	op := rec.Begin(client, drill.OpAcquire, name, 0)
	l, err := m.Lock(lctx)
	if err != nil {
		op.Fail(err)
		return 2
	}
	op.End(drill.Ok, func(e *drill.Event) { e.Token, e.Entry = l.Token(), l.Owner() })
	var wg sync.WaitGroup
	wg.Go(func() { observe(rec, client, l) }) // ends with the lease
	defer func() {
		release(rec, client, l, t.TTL)
		wg.Wait() // the lease's end is in the history before the exit
		rec.Info(client, opExit, name, "")
	}()

	tok, owner := l.Token(), l.Owner()
	if err := fc.Increment(ctx, rec, client, tok, owner); err != nil {
		return fail("increment", err)
	}
	if err := uc.Increment(ctx, rec, client, tok, owner); err != nil {
		return fail("increment", err)
	}
	fv, ferr := fc.RecordedRead(ctx, rec, client, tok, owner)
	uv, uerr := uc.RecordedRead(ctx, rec, client, tok, owner)
	if ferr != nil || uerr != nil {
		return fail("read", errors.Join(ferr, uerr))
	}
	rec.Info(client, opReady, name, "")
	if lctx.Err() != nil { // stdin closed meanwhile
		return 3
	}
	var line string
	select {
	case line = <-lines:
	case <-eof:
		return 3
	}
	if line != "go" {
		return fail("stdin", fmt.Errorf("got %q, want \"go\"", line))
	}
	_ = fc.RecordedWrite(ctx, rec, client, tok, owner, fv+1)
	_ = uc.RecordedWrite(ctx, rec, client, tok, owner, uv+1)
	select {
	case <-l.Done():
	case <-time.After(3 * t.TTL):
	}
	return 0
}

// release releases l (bounded by ttl) and records it.
func release(rec *drill.Recorder, client string, l *baton.Lease, ttl time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), ttl)
	defer cancel()
	op := rec.Begin(client, drill.OpRelease, l.Name(), l.Token())
	if err := l.Release(ctx); err != nil {
		op.Fail(err)
	} else {
		op.Ok()
	}
}
