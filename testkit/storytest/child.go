// Package storytest holds the engine side of the ZooKeeper stories that
// the tests of baton's metrics adapters (the prom and otel modules) tell
// alike: the paused holder, a child process re-executed from the test
// binary, and the herd of waiters behind one holder. Each adapter's tests
// keep only what they read from their own Observer.
package storytest

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/fence"
	"github.com/baton-go/baton/zklock"

	_ "modernc.org/sqlite" // the fence of the paused-holder story
)

// The child's settings, in its environment. Each test binary re-executes
// only itself, so one set of names serves every module.
const (
	envZK   = "BATON_STORY_HOLDER" // the ZooKeeper address (a fault proxy)
	envName = "BATON_STORY_HOLDER_NAME"
	envDB   = "BATON_STORY_HOLDER_DB"  // the SQLite file of the fence
	envOut  = "BATON_STORY_HOLDER_OUT" // where the child's dump goes
)

// PausedTimeout is the ZooKeeper session timeout of the paused-holder
// story: short, so the story is quick, and long enough that a child under
// the race detector keeps its session until it is stopped.
const PausedTimeout = 3 * time.Second

// IsHolder reports whether this process is the paused holder: TestMain
// then runs HolderMain instead of the tests.
func IsHolder() bool { return os.Getenv(envZK) != "" }

// Child is what an adapter gives the paused holder.
type Child struct {
	// Observer sees every event of the child's client and fence.
	Observer baton.Observer
	// Job, when set, returns the context the lock is taken in and a
	// func that ends it, called once the late write is refused.
	Job func(context.Context) (context.Context, func())
	// Dump writes what Observer recorded to the file at path.
	Dump func(ctx context.Context, path string) error
}

// HolderMain is the paused holder, and returns its exit code. It takes
// the lock on ZooKeeper with the Child newChild returns, prints "granted
// <token>" and every state of its lease ("state suspended"), waits for
// the lease to end (the parent SIGSTOPs it past the session timeout
// meanwhile), makes the late write it had decided on at the fenced SQLite
// table, which must be refused, prints "lost <err>", dumps its Observer's
// record and prints "done". A failure prints "error <what>".
func HolderMain(newChild func() (Child, error)) int {
	fail := func(what string, err error) int {
		fmt.Fprintf(os.Stderr, "holder: %s: %v\n", what, err)
		fmt.Println("error", what)
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := newChild()
	if err != nil {
		return fail("observer", err)
	}
	obs, lostSeen := seeLoss(c.Observer)
	client, err := zklock.Dial(ctx, []string{os.Getenv(envZK)}, zklock.Options{SessionTimeout: PausedTimeout, Observer: obs})
	if err != nil {
		return fail("dial", err)
	}
	defer client.Close()
	name := os.Getenv(envName)
	tbl, db, err := OpenFence(ctx, os.Getenv(envDB), c.Observer)
	if err != nil {
		return fail("fence", err)
	}
	defer db.Close()
	m, err := client.Mutex(name)
	if err != nil {
		return fail("mutex", err)
	}
	lockCtx, endJob := ctx, func() {}
	if c.Job != nil {
		lockCtx, endJob = c.Job(ctx)
	}
	l, err := m.Lock(lockCtx)
	if err != nil {
		return fail("lock", err)
	}
	fmt.Println("granted", l.Token())
	if !printStates(ctx, l) {
		return fail("lease", errors.New("never ended"))
	}
	// The write this holder had decided on before it was paused, made
	// without looking at its lease again, in the lease's context, once
	// the parent says its own write is done: a stop that comes late
	// lets the session watchdog end the lease before the pause, and the
	// late write must still come after the new holder's.
	fmt.Println("waiting")
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		return fail("go-ahead", err)
	}
	werr := tbl.Write(context.WithoutCancel(l.Context()), db, name, l.Token(), l.Owner(), func(*sql.Tx) error { return nil })
	if !errors.Is(werr, baton.ErrStaleToken) {
		return fail("late write", fmt.Errorf("%v, want %v", werr, baton.ErrStaleToken))
	}
	endJob()
	fmt.Println("lost", l.Err())
	// A lease's state is visible before its observer has been told of
	// the change (events go out after the lease's lock is let go), so
	// the dump waits until the observer has returned from the loss.
	select {
	case <-lostSeen:
	case <-ctx.Done():
		return fail("lost event", ctx.Err())
	}
	if err := c.Dump(ctx, os.Getenv(envOut)); err != nil {
		return fail("dump", err)
	}
	fmt.Println("done")
	return 0
}

// seeLoss wraps o in an observer that closes the returned channel once
// o has returned from the first EventLost.
func seeLoss(o baton.Observer) (baton.Observer, <-chan struct{}) {
	seen := make(chan struct{})
	var once sync.Once
	return baton.ObserverFunc(func(ctx context.Context, e baton.Event) {
		o.Observe(ctx, e)
		if e.Kind == baton.EventLost {
			once.Do(func() { close(seen) })
		}
	}), seen
}

// printStates prints every state of l until it ends, and reports whether
// it ended before ctx did.
func printStates(ctx context.Context, l *baton.Lease) bool {
	states := make(chan struct{})
	go func() { // owner: the lease; ends with it
		defer close(states)
		st, ch := l.Observe()
		for !st.Ended() {
			<-ch
			st, ch = l.Observe()
			fmt.Println("state", st)
		}
	}()
	select {
	case <-states: // the lease ended and its last state is printed
		return true
	case <-ctx.Done():
		return false
	}
}

// OpenFence opens the fence table in the SQLite file at path, reporting
// refusals to o. Both processes of the story open the same file.
func OpenFence(ctx context.Context, path string, o baton.Observer) (fence.Table, *sql.DB, error) {
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)&_pragma=journal_mode(wal)&_txlock=immediate")
	if err != nil {
		return fence.Table{}, nil, err
	}
	tbl := fence.Table{Dialect: fence.SQLite, Observer: o}
	if err := tbl.Migrate(ctx, db); err != nil {
		db.Close()
		return fence.Table{}, nil, err
	}
	return tbl, db, nil
}
