package drill_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/drill"
	"github.com/baton-go/baton/drill/drilltest"
	batonengine "github.com/baton-go/baton/engine"
	"github.com/baton-go/baton/tasks"
)

// TestRow02PausedTaskOwner is row 2 for durable tasks (package tasks' J7
// takeover story under a real pause): a runner in a child process holds the SQL
// mutex, claims task J7 with its lock's token as epoch, checkpoints, and is
// frozen with SIGSTOP. Its lock and its task lease expire; a second runner
// is granted the lock with a larger token, takes the task over (the
// takeover succeeds only because the lease expired and the epoch is
// greater), resumes from the old runner's checkpoint and completes it.
// The old runner resumes and sends the checkpoint and completion it had
// decided on: both affect no row (*tasks.StaleError). Its unfenced twin —
// an effects table written without looking at the task row — records the
// task completed twice: the negative control goes red.
func TestRow02PausedTaskOwner(t *testing.T) {
	forEachSQLEngine(t, func(t *testing.T, e *engine) {
		trials(t, e, 1, pausedTaskOwner)
	})
}

const (
	taskHolderEnv   = "BATON_DRILL_TASK_HOLDER"
	taskTableEnv    = "BATON_DRILL_TASK_TABLE"
	taskEffectsEnv  = "BATON_DRILL_TASK_EFFECTS"
	taskKey         = "J7"
	opTaskWrite     = "task-write"
	opTaskEffect    = "task-effect"
	taskWriteStale  = "stale"
	taskWriteFailed = "failed"
)

// taskStore opens the task table and the effects table of a drill on the
// engine's database.
func taskStore(engine, endpoint, table string) (*sql.DB, *tasks.Store, error) {
	driver, dsn := sqlDriverDSN(engine, endpoint)
	db, err := sql.Open(driver, dsn)
	if err != nil {
		return nil, nil, err
	}
	s, err := tasks.New(db, tasks.Options{Table: table, Lease: sqlTTL})
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	return db, s, nil
}

// effect records an unfenced effect of the task: what a runner that does
// not check the task row does.
func effect(ctx context.Context, db *sql.DB, effects, engine, who, what string) error {
	q := `INSERT INTO ` + effects + ` (task, who, what) VALUES (?, ?, ?)`
	if engine == "postgres" {
		q = `INSERT INTO ` + effects + ` (task, who, what) VALUES ($1, $2, $3)`
	}
	_, err := db.ExecContext(ctx, q, taskKey, who, what)
	return err
}

// taskWriteDetail classifies a fenced task write's result.
func taskWriteDetail(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, baton.ErrStaleToken):
		return taskWriteStale
	}
	return taskWriteFailed + ": " + err.Error()
}

// taskHolderMain is the old runner, in the child process.
func taskHolderMain() int {
	rec := drill.NewRecorder(os.Stdout)
	client, name := os.Getenv(holderClient), os.Getenv(holderName)
	engine, endpoint, effects := os.Getenv(taskHolderEnv), os.Getenv(holderEndpoint), os.Getenv(taskEffectsEnv)
	fail := func(what string, err error) int {
		rec.Info(client, "error", name, what+": "+err.Error())
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	lc, err := dialChild(ctx, engine, endpoint)
	if err != nil {
		return fail("dial", err)
	}
	defer lc.close()
	db, s, err := taskStore(engine, endpoint, os.Getenv(taskTableEnv))
	if err != nil {
		return fail("tasks", err)
	}
	defer db.Close()
	m, err := lc.mutex(name)
	if err != nil {
		return fail("mutex", err)
	}
	op := rec.Begin(client, drill.OpAcquire, name, 0)
	l, err := m.Lock(ctx)
	if err != nil {
		op.Fail(err)
		return 2
	}
	op.End(drill.Ok, func(e *drill.Event) { e.Token, e.Entry = l.Token(), l.Owner() })
	cl, err := s.Claim(ctx, tasks.ClaimantOf(l))
	if err != nil {
		return fail("claim", err)
	}
	if err := cl.Checkpoint(ctx, []byte("a1")); err != nil {
		return fail("checkpoint", err)
	}
	if err := effect(ctx, db, effects, engine, client, "step a1"); err != nil {
		return fail("effect", err)
	}
	rec.Info(client, "ready", name, strconv.FormatUint(l.Token(), 10))
	var line string
	if _, err := fmt.Fscanln(os.Stdin, &line); err != nil || line != "go" {
		return fail("stdin", fmt.Errorf("got %q (%v)", line, err))
	}
	// What the runner had decided on before the pause, sent without a look
	// at its lease: the next checkpoint, the completion, and the unfenced
	// effect of completing.
	rec.Info(client, opTaskWrite, "checkpoint", taskWriteDetail(cl.Checkpoint(ctx, []byte("a2"))))
	rec.Info(client, opTaskWrite, "complete", taskWriteDetail(cl.Complete(ctx, []byte("by old"))))
	if err := effect(ctx, db, effects, engine, client, "complete"); err != nil {
		rec.Info(client, opTaskEffect, "complete", "failed: "+err.Error())
	} else {
		rec.Info(client, opTaskEffect, "complete", "ok")
	}
	_ = l.Release(ctx) // Lost by now: returns its cause
	rec.Info(client, "exit", name, "")
	return 0
}

func pausedTaskOwner(t *testing.T, e *engine, seed uint64) {
	run := drilltest.Start(t, seed)
	name := lockName("row02tasks", e, seed)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	id := batonengine.NewOwnerID()[:12]
	table, effects := "drill_tasks_"+id, "drill_fx_"+id
	db, s, err := taskStore(e.name, e.endpoint, table)
	if err != nil {
		t.Fatalf("tasks: %v", err)
	}
	t.Cleanup(func() {
		for _, tb := range []string{table, effects} {
			if _, err := db.ExecContext(context.Background(), `DROP TABLE IF EXISTS `+tb); err != nil {
				t.Errorf("DROP TABLE %s = %v", tb, err)
			}
		}
		db.Close()
	})
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("tasks Migrate = %v", err)
	}
	if _, err := db.ExecContext(ctx, `CREATE TABLE `+effects+` (task VARCHAR(64) NOT NULL, who VARCHAR(64) NOT NULL, what VARCHAR(64) NOT NULL)`); err != nil {
		t.Fatalf("create effects table: %v", err)
	}
	if _, _, err := s.Enqueue(ctx, taskKey, []byte("export"), 0); err != nil {
		t.Fatalf("Enqueue = %v", err)
	}

	ch := startChild(t, run, taskHolderEnv+"="+e.name, holderEndpoint+"="+e.endpoint, holderName+"="+name,
		holderClient+"=old", taskTableEnv+"="+table, taskEffectsEnv+"="+effects)
	ready := ch.await(t, 20*time.Second, "ready", func(ev drill.Event) bool { return ev.Op == "ready" })
	oldTok, _ := strconv.ParseUint(ready.Detail, 10, 64)

	w := newHolder(t, run, e, "new", name, clientOpts{})
	got := make(chan grantLease, 1)
	go func() { // owner: this test, which receives on got
		l, err := w.lock(ctx)
		got <- grantLease{l, err}
	}()
	waitEntries(t, e, name, 2)
	heal := run.Rec.Fault("old", "sigstop")
	ch.signal(t, syscall.SIGSTOP)
	var g grantLease
	select {
	case g = <-got:
	case <-time.After(3 * e.ttl):
		t.Fatalf("new runner not granted the lock within 3×TTL of the old one's pause")
	}
	if g.err != nil {
		t.Fatalf("new runner's Lock = %v", g.err)
	}
	defer w.release(context.Background(), g.l)
	if g.l.Token() <= oldTok {
		t.Errorf("new runner's token %d, want > the old runner's %d (I2)", g.l.Token(), oldTok)
	}
	// The task's lease expires by the database's clock; then the takeover.
	var seen tasks.Task
	for deadline := time.Now().Add(3 * e.ttl); ; time.Sleep(50 * time.Millisecond) {
		ts, err := s.Expired(ctx, 10)
		if err != nil {
			t.Fatalf("Expired = %v", err)
		}
		if len(ts) > 0 {
			seen = ts[0]
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s not expired 3×TTL after its owner's pause", taskKey)
		}
	}
	if seen.Epoch != oldTok {
		t.Errorf("task's epoch %d before the takeover, want the old runner's token %d", seen.Epoch, oldTok)
	}
	cl, err := s.Takeover(ctx, seen, tasks.ClaimantOf(g.l))
	if err != nil {
		t.Fatalf("Takeover = %v", err)
	}
	if cp := string(cl.Task().Checkpoint); cp != "a1" {
		t.Errorf("taken-over task's checkpoint %q, want the old runner's %q (resume)", cp, "a1")
	}
	if err := cl.Checkpoint(ctx, []byte("b1")); err != nil {
		t.Errorf("new runner's Checkpoint = %v", err)
	}
	if err := cl.Complete(ctx, []byte("by new")); err != nil {
		t.Errorf("new runner's Complete = %v", err)
	}
	if err := effect(ctx, db, effects, e.name, "new", "complete"); err != nil {
		t.Fatalf("effect = %v", err)
	}

	if _, err := ch.stdin.Write([]byte("go\n")); err != nil {
		t.Fatal(err)
	}
	ch.signal(t, syscall.SIGCONT)
	heal()
	for _, what := range []string{"checkpoint", "complete"} {
		ev := ch.await(t, 20*time.Second, what, func(ev drill.Event) bool { return ev.Op == opTaskWrite && ev.Name == what })
		if ev.Detail != taskWriteStale {
			t.Errorf("old runner's late %s = %q, want a stale error: a superseded owner's write must affect no row", what, ev.Detail)
		}
	}
	fx := ch.await(t, 20*time.Second, "effect", func(ev drill.Event) bool { return ev.Op == opTaskEffect })
	ch.await(t, 20*time.Second, "exit", func(ev drill.Event) bool { return ev.Op == "exit" })

	final, err := s.Get(ctx, taskKey)
	if err != nil {
		t.Fatalf("Get = %v", err)
	}
	if final.State != tasks.Done || string(final.Result) != "by new" || string(final.Checkpoint) != "b1" ||
		final.Owner != g.l.Owner() || final.Epoch != g.l.Token() {
		t.Errorf("task after the old runner's late writes = %s/%q/%d result %q checkpoint %q; want DONE by the new runner (%d), result %q, checkpoint %q",
			final.State, final.Owner, final.Epoch, final.Result, final.Checkpoint, g.l.Token(), "by new", "b1")
	}
	// The negative control: the effects written without the task row's
	// fence show the task completed twice.
	var completions int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM `+effects+` WHERE what = 'complete'`).Scan(&completions); err != nil {
		t.Fatalf("count effects: %v", err)
	}
	if fx.Detail != "ok" || completions != 2 {
		t.Errorf("negative control: the unfenced effects show %d completions (old runner's insert: %s), want 2 (the drill could not fail)", completions, fx.Detail)
	} else {
		t.Logf("negative control: unfenced effects show the task completed %d times; the task row once, by epoch %d", completions, final.Epoch)
	}
	run.Report(drill.CheckTokens(run.Rec.Events()))
}

// grantLease is an acquire's result.
type grantLease struct {
	l   *baton.Lease
	err error
}
