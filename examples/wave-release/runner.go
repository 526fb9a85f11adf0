package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/examples/internal/embedded"
	"github.com/baton-go/baton/examples/internal/story"
	"github.com/baton-go/baton/fence"
	"github.com/baton-go/baton/sqllock"
	"github.com/baton-go/baton/tasks"
)

const (
	dbFile       = "wms.db"
	electionName = "wms/wave-release"
	// ttl is the leadership lease and taskLease the task table's: short,
	// so a pause outlives both in seconds, yet long enough that the
	// leader's renewals on a loaded SQLite file are never too late.
	ttl       = 2 * time.Second
	taskLease = time.Second
	pickTime  = 100 * time.Millisecond // releasing one pick list to the floor
)

// waves to release: key → number of pick lists.
var waves = []struct {
	key   string
	picks int
}{{"W-1", 3}, {"W-2", 6}}

// floor is the warehouse floor: releasing a pick list sends it to the
// pickers' handhelds (one message row each). A message sent twice sends
// two pickers to the same shelves, so every release is fenced with the
// leader's epoch on the wave's fence (fence.Table, resource "wave/<key>").
var floorFence = fence.Table{Dialect: fence.SQLite}

func migrate(ctx context.Context, db *sql.DB, ts *tasks.Store) error {
	if err := floorFence.Migrate(ctx, db); err != nil {
		return err
	}
	if _, err := db.ExecContext(ctx, `CREATE TABLE floor_messages (
		id INTEGER PRIMARY KEY AUTOINCREMENT, wave TEXT NOT NULL, pick INTEGER NOT NULL,
		runner TEXT NOT NULL, epoch INTEGER NOT NULL)`); err != nil {
		return err
	}
	return ts.Migrate(ctx)
}

// runner is one wave-release process: its own connections (through a
// Link, so the story can pause it), lock client and task store.
type runner struct {
	name string
	t    *story.Teller
	*embedded.Process
	elect *baton.Election
	tasks *tasks.Store
	// beforePick, if set, runs before each pick list is released.
	beforePick func(wave string, pick int)
}

func newRunner(ctx context.Context, dir, name string, t *story.Teller) (*runner, error) {
	p, err := embedded.OpenProcess(ctx, dir, dbFile, sqllock.Options{TTL: ttl})
	if err != nil {
		return nil, err
	}
	r := &runner{name: name, t: t, Process: p}
	if r.elect, err = r.Locks.Election(electionName); err == nil {
		r.tasks, err = tasks.New(p.DB, tasks.Options{Dialect: fence.SQLite, Lease: taskLease})
	}
	if err != nil {
		return nil, errors.Join(err, r.Close())
	}
	return r, nil
}

func (r *runner) say(format string, args ...any) {
	r.t.Say("%-8s %s", r.name, fmt.Sprintf(format, args...))
}

// lead is what a runner does while it leads: enqueue the waves (a
// producer may repeat that freely) and release them one by one, claiming
// each as a durable task with its epoch, or taking over a wave whose
// owner's task lease expired. It returns when every wave is done or
// leadership is lost (an error wrapping baton.ErrLost or
// baton.ErrStaleToken).
func (r *runner) lead(ctx context.Context, ld *baton.Leader) error {
	for _, w := range waves {
		if _, _, err := r.tasks.Enqueue(ctx, w.key, []byte(strconv.Itoa(w.picks)), 0); err != nil {
			return err
		}
	}
	me := tasks.ClaimantOf(ld.Lease())
	for {
		if err := ld.Admit(ctx); err != nil {
			return err // no new wave without leadership
		}
		cl, err := r.next(ctx, me)
		if errors.Is(err, errAllDone) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := r.release(ctx, cl); err != nil {
			return err
		}
	}
}

var errAllDone = errors.New("every wave is done")

// next claims a pending wave, else takes over one whose owner's lease
// expired, else waits for one of the two.
func (r *runner) next(ctx context.Context, me tasks.Claimant) (*tasks.Claim, error) {
	for {
		cl, err := r.tasks.Claim(ctx, me)
		if !errors.Is(err, tasks.ErrNoTask) {
			return cl, err
		}
		expired, err := r.tasks.Expired(ctx, 1)
		if err != nil {
			return nil, err
		}
		if len(expired) > 0 {
			seen := expired[0]
			cl, err := r.tasks.Takeover(ctx, seen, me)
			if err == nil {
				r.say("takes over %s from the leader of epoch %d, whose task lease expired; checkpoint %q",
					seen.Key, seen.Epoch, cl.Task().Checkpoint)
			}
			return cl, err
		}
		if done, err := r.allDone(ctx); err != nil || done {
			return nil, errors.Join(err, errAllDone)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(taskLease / 10):
		}
	}
}

func (r *runner) allDone(ctx context.Context) (bool, error) {
	for _, w := range waves {
		task, err := r.tasks.Get(ctx, w.key)
		if err != nil {
			return false, err
		}
		if task.State != tasks.Done {
			return false, nil
		}
	}
	return true, nil
}
