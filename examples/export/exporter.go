package main

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/examples/internal/embedded"
	"github.com/baton-go/baton/examples/internal/story"
	"github.com/baton-go/baton/fence"
	"github.com/baton-go/baton/sqllock"
	"github.com/baton-go/baton/tasks"
)

const (
	dbFile    = "exports.db"
	semName   = "exports/heavy"
	permits   = 3
	ttl       = 2 * time.Second // permit lease: short, yet room for five processes on one SQLite file
	taskLease = time.Second
	shards    = 4
	shardTime = 80 * time.Millisecond // exporting one shard
)

// exportKeys are the export jobs, each a durable task of shards shards.
var exportKeys = []string{"E-1", "E-2", "E-3", "E-4", "E-5"}

// shared is what every exporter process shares: the object store and the
// story's counters.
type shared struct {
	t       *story.Teller
	objects fence.ObjectStore
	running atomic.Int32 // exports running now, in every process
	most    atomic.Int32 // the most that ever ran at once
	// kill, if set, is asked after each shard's upload whether the
	// exporter dies right there (before publishing it).
	kill func(export string, shard int) bool
	// killed is the object the killed exporter uploaded last, and the
	// token it uploaded it with; written by that exporter before its
	// goroutine ends.
	killedObject string
	killedToken  uint64
}

// exporter is one exporter process: its own connections (through a Link,
// so the story can kill it), lock client, semaphore and task store.
type exporter struct {
	name string
	sh   *shared
	*embedded.Process
	sem   *baton.Semaphore
	tasks *tasks.Store
	pub   fence.Publisher
}

// errKilled is how a killed exporter's goroutine ends: the process is gone.
var errKilled = errors.New("exporter killed")

func newExporter(ctx context.Context, dir, name string, sh *shared) (*exporter, error) {
	p, err := embedded.OpenProcess(ctx, dir, dbFile, sqllock.Options{TTL: ttl})
	if err != nil {
		return nil, err
	}
	e := &exporter{name: name, sh: sh, Process: p,
		pub: fence.Publisher{Store: sh.objects, Dialect: fence.SQLite}}
	if e.sem, err = e.Locks.Semaphore(semName, permits); err == nil {
		e.tasks, err = tasks.New(p.DB, tasks.Options{Dialect: fence.SQLite, Lease: taskLease})
	}
	if err != nil {
		return nil, errors.Join(err, e.Close())
	}
	return e, nil
}

func (e *exporter) say(format string, args ...any) {
	e.sh.t.Say("%-10s %s", e.name, fmt.Sprintf(format, args...))
}

// loop runs exports until every one is done: take a permit (at most
// three heavy exports at once), then a task with the permit's token as
// epoch — a pending one, or one whose owner's lease expired.
func (e *exporter) loop(ctx context.Context) error {
	for {
		permit, err := e.sem.Acquire(ctx)
		if err != nil {
			return err
		}
		cl, err := e.next(ctx, tasks.ClaimantOf(permit))
		if cl == nil || err != nil {
			_ = permit.Release(context.WithoutCancel(ctx))
			if err != nil || e.allDone(ctx) {
				return err
			}
			select { // a task is running elsewhere: look again soon
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(taskLease / 10):
			}
			continue
		}
		e.sh.started()
		err = e.underPermit(ctx, cl, permit)
		e.sh.running.Add(-1)
		switch {
		case errors.Is(err, errKilled):
			return err // no release: a dead process releases nothing
		case errors.Is(permit.Err(), baton.ErrLost):
			// The permit ran out under this export (renewals too late):
			// it stopped, its task lease expires and another exporter
			// takes it over, as for a killed one.
			e.say("permit token %d lost: abandons %s to a takeover", permit.Token(), cl.Key())
			continue
		}
		if err := errors.Join(err, permit.Release(context.WithoutCancel(ctx))); err != nil {
			return err
		}
	}
}

// underPermit runs an export only while its permit lives: the permit's
// loss cancels it, so at most three exports ever run at once.
func (e *exporter) underPermit(ctx context.Context, cl *tasks.Claim, permit *baton.Lease) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(permit.Context(), cancel)
	defer stop()
	return e.export(ctx, cl, permit)
}

// next claims a pending export or takes over an expired one; nil, nil
// when there is neither right now.
func (e *exporter) next(ctx context.Context, me tasks.Claimant) (*tasks.Claim, error) {
	cl, err := e.tasks.Claim(ctx, me)
	if err == nil {
		e.say("permit token %d (%d running) → claims %s", me.Epoch, e.sh.running.Load()+1, cl.Key())
		return cl, nil
	}
	if !errors.Is(err, tasks.ErrNoTask) {
		return nil, err
	}
	expired, err := e.tasks.Expired(ctx, 1)
	if err != nil || len(expired) == 0 {
		return nil, err
	}
	seen := expired[0]
	cl, err = e.tasks.Takeover(ctx, seen, me)
	switch {
	case errors.Is(err, tasks.ErrChanged), errors.Is(err, baton.ErrNotAcquired), errors.Is(err, baton.ErrStaleToken):
		return nil, nil // taken by someone else, not expired after all, or this permit is older than its owner's
	case err != nil:
		return nil, err
	}
	e.say("permit token %d → takes over %s (owner of token %d stopped renewing), from checkpoint %q",
		me.Epoch, seen.Key, seen.Epoch, cl.Task().Checkpoint)
	return cl, nil
}

// started counts an export that starts running and keeps the maximum.
func (sh *shared) started() {
	n := sh.running.Add(1)
	for m := sh.most.Load(); n > m; m = sh.most.Load() {
		if sh.most.CompareAndSwap(m, n) {
			return
		}
	}
}

func (e *exporter) allDone(ctx context.Context) bool {
	for _, k := range exportKeys {
		if t, err := e.tasks.Get(ctx, k); err != nil || t.State != tasks.Done {
			return false
		}
	}
	return true
}
