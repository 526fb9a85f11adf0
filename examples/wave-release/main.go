// Command wave-release tells the split-brain story of a warehouse's wave
// release: runners elect a leader with an epoch, the leader releases
// waves of pick lists as durable tasks, and a leader that paused past its
// lease comes back to find its epoch refused while the new leader resumed
// its half-done wave from the checkpoint.
//
//	cd examples && go run ./wave-release
package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/examples/internal/embedded"
	"github.com/baton-go/baton/examples/internal/story"
	"github.com/baton-go/baton/fence"
	"github.com/baton-go/baton/tasks"
)

func main() { story.Main("wave-release", run) }

// Result is what the story left behind, for the test to check.
type Result struct {
	Epoch1, Epoch2 uint64
	ResumedAt      int   // the first pick list of W-2 runner-2 released
	LateRelease    error // what runner-1 got for the pick list it sent after its pause
	Runner1Lost    bool  // runner-1's leadership was lost by then
	Waves          map[string]tasks.Task
	Messages       map[string]int // "wave/pick" → floor messages sent
}

type won struct {
	ld  *baton.Leader
	err error
}

func run(ctx context.Context, w io.Writer, dir string) (res Result, err error) {
	t := story.New(w)
	setup, ts, err := prepare(ctx, dir)
	if err != nil {
		return res, err
	}
	defer setup.Close()
	r1, err := newRunner(ctx, dir, "runner-1", t)
	if err != nil {
		return res, err
	}
	defer func() { err = errors.Join(err, r1.Close()) }()
	r2, err := newRunner(ctx, dir, "runner-2", t)
	if err != nil {
		return res, err
	}
	defer func() { err = errors.Join(err, r2.Close()) }()
	t.Say("election %q (lease %v), task leases of %v; waves W-1 (3 pick lists) and W-2 (6)", electionName, ttl, taskLease)

	ld1, err := r1.elect.CampaignAs(ctx, r1.name)
	if err != nil {
		return res, err
	}
	res.Epoch1 = ld1.Epoch()
	r1.say("leads with epoch %d", res.Epoch1)
	cctx, cancel := context.WithTimeout(ctx, 20*ttl)
	defer cancel()
	won2 := make(chan won, 1)
	go func() {
		ld, err := r2.elect.CampaignAs(cctx, r2.name)
		won2 <- won{ld, err}
	}()

	p := pauseAt(r1, "W-2", 4)
	var late error // what runner-1's lead returns
	r1done := make(chan struct{})
	go func() { defer close(r1done); late = r1.lead(ctx, ld1) }()
	defer func() { p.wake(); <-r1done }() // runner-1's goroutine ends before the runners close
	select {
	case <-p.paused:
	case <-r1done:
		return res, fmt.Errorf("runner-1 stopped before its pause: %v", late)
	}
	o := <-won2
	if o.err != nil {
		return res, fmt.Errorf("runner-2's campaign: %w", o.err)
	}
	if err := takeOver(ctx, r2, o.ld, p.at, &res); err != nil {
		return res, err
	}
	p.wake()
	<-r1done
	res.LateRelease = late
	if err := tellLate(r1, ld1, p.at, &res); err != nil {
		return res, err
	}
	if err := o.ld.Resign(ctx, baton.ResignPlan{}); err != nil {
		return res, err
	}
	r2.say("resigns")
	names := map[string]string{ld1.Lease().Owner(): r1.name, o.ld.Lease().Owner(): r2.name}
	return res, collect(ctx, t, setup, ts, names, &res)
}

func prepare(ctx context.Context, dir string) (*sql.DB, *tasks.Store, error) {
	setup, err := embedded.Open(dir, dbFile)
	if err != nil {
		return nil, nil, err
	}
	ts, err := tasks.New(setup, tasks.Options{Dialect: fence.SQLite, Lease: taskLease})
	if err == nil {
		err = migrate(ctx, setup, ts)
	}
	if err != nil {
		return nil, nil, errors.Join(err, setup.Close())
	}
	return setup, ts, nil
}

// pause is a runner frozen before one pick list until wake.
type pause struct {
	paused chan struct{} // closed when the runner froze
	at     time.Time     // when it froze; written before paused is closed
	wake   func()        // thaws it; safe to call more than once
}

// pauseAt freezes r just before it sends pick list pick of wave.
func pauseAt(r *runner, wave string, pick int) *pause {
	p := &pause{paused: make(chan struct{})}
	resume := make(chan struct{})
	p.wake = sync.OnceFunc(func() { r.Link.Thaw(); close(resume) })
	r.beforePick = func(w string, n int) {
		if w == wave && n == pick {
			r.Link.Freeze()
			p.at = time.Now()
			r.say("freezes just before it sends pick list %d of %s: no renewal, no heartbeat gets out", pick, wave)
			close(p.paused)
			<-resume
		}
	}
	return p
}

// takeOver is runner-2's turn as the new leader: it releases the waves,
// taking W-2 over from its checkpoint.
func takeOver(ctx context.Context, r2 *runner, ld *baton.Leader, pausedAt time.Time, res *Result) error {
	res.Epoch2 = ld.Epoch()
	r2.say("leads with epoch %d after %v: runner-1's leadership lease expired", res.Epoch2, time.Since(pausedAt).Round(100*time.Millisecond))
	r2.beforePick = func(wave string, pick int) {
		if wave == "W-2" && res.ResumedAt == 0 {
			res.ResumedAt = pick
		}
	}
	if err := r2.lead(ctx, ld); err != nil {
		return fmt.Errorf("runner-2: %w", err)
	}
	return nil
}

// tellLate tells what became of runner-1's pick list sent after its pause.
func tellLate(r1 *runner, ld1 *baton.Leader, pausedAt time.Time, res *Result) error {
	res.Runner1Lost = errors.Is(ld1.Lease().Err(), baton.ErrLost)
	r1.say("wakes up after %v and sends pick list 4 of W-2 with epoch %d", time.Since(pausedAt).Round(100*time.Millisecond), res.Epoch1)
	var stale *fence.StaleError
	if !errors.As(res.LateRelease, &stale) {
		return fmt.Errorf("runner-1's late release = %v, want a stale token", res.LateRelease)
	}
	r1.say("→ refused by the wave's fence, no message sent: epoch %d after epoch %d (%v)", stale.Token, stale.StoredToken, baton.ErrStaleToken)
	r1.say("only now learns its leadership ended: %v", ld1.Lease().Err())
	return nil
}

func collect(ctx context.Context, t *story.Teller, setup *sql.DB, ts *tasks.Store, names map[string]string, res *Result) error {
	res.Waves = map[string]tasks.Task{}
	for _, w := range waves {
		task, err := ts.Get(ctx, w.key)
		if err != nil {
			return err
		}
		res.Waves[w.key] = task
		t.Say("%s: %s by %s, epoch %d, %s", task.Key, task.State, names[task.Owner], task.Epoch, task.Result)
	}
	var err error
	res.Messages, err = messages(ctx, setup)
	t.Say("floor messages per pick list: %v", res.Messages)
	return err
}
