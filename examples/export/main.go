// Command export tells the story of heavy data exports: at most three run
// at once (a baton semaphore), each is a durable task checkpointed per
// shard, results are published through fenced pointers to objects that
// are never overwritten, and a killed exporter's export is taken over
// while its half-uploaded object is listed for cleanup.
//
//	cd examples && go run ./export
package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sync"
	"time"

	"github.com/baton-go/baton/examples/internal/embedded"
	"github.com/baton-go/baton/examples/internal/story"
	"github.com/baton-go/baton/fence"
	"github.com/baton-go/baton/tasks"
)

func main() { story.Main("export", run) }

// Result is what the story left behind, for the test to check.
type Result struct {
	MostRunning  int                      // the most exports that ran at once
	Exports      map[string]tasks.Task    // key → final task
	Pointers     map[string]fence.Pointer // shard name → published pointer
	Killed       string                   // the killed exporter
	KilledToken  uint64                   // its permit's token
	KilledObject string                   // the object it uploaded but never published
	Orphans      []string                 // objects listed for cleanup
	OrphansAfter int                      // orphans listed after the cleanup
}

const exporters = 5

func run(ctx context.Context, w io.Writer, dir string) (res Result, err error) {
	sh := &shared{t: story.New(w), objects: fence.DirStore{Root: filepath.Join(dir, "objects")}}
	setup, err := embedded.Open(dir, dbFile)
	if err != nil {
		return res, err
	}
	defer setup.Close()
	if err := prepare(ctx, setup); err != nil {
		return res, err
	}
	var killOnce sync.Once
	sh.kill = func(export string, shard int) (kill bool) {
		if export == "E-2" && shard == 3 {
			killOnce.Do(func() { kill = true })
		}
		return kill
	}
	sh.t.Say("%d exports of %d shards, %d exporter processes, semaphore %q with %d permits (lease %v)",
		len(exportKeys), shards, exporters, semName, permits, ttl)

	var all []*exporter
	defer func() {
		for _, e := range all {
			err = errors.Join(err, e.Close())
		}
	}()
	for i := range exporters {
		e, err := newExporter(ctx, dir, fmt.Sprintf("exporter-%d", i+1), sh)
		if err != nil {
			return res, err
		}
		all = append(all, e)
	}
	errs := make([]error, len(all))
	var wg sync.WaitGroup
	for i, e := range all {
		wg.Go(func() { errs[i] = e.loop(ctx) })
	}
	wg.Wait()
	for i, err := range errs {
		switch {
		case errors.Is(err, errKilled):
			res.Killed = all[i].name
		case err != nil:
			return res, fmt.Errorf("%s: %w", all[i].name, err)
		}
	}
	res.MostRunning = int(sh.most.Load())
	res.KilledObject, res.KilledToken = sh.killedObject, sh.killedToken
	sh.t.Say("every export done; at most %d ran at once", res.MostRunning)
	return res, cleanup(ctx, sh, setup, &res)
}

func prepare(ctx context.Context, db *sql.DB) error {
	ts, err := tasks.New(db, tasks.Options{Dialect: fence.SQLite, Lease: taskLease})
	if err != nil {
		return err
	}
	if err := ts.Migrate(ctx); err != nil {
		return err
	}
	if err := (fence.Publisher{Store: fence.DirStore{}, Dialect: fence.SQLite}).Migrate(ctx, db); err != nil {
		return err
	}
	for _, k := range exportKeys {
		if _, _, err := ts.Enqueue(ctx, k, nil, 0); err != nil {
			return err
		}
	}
	return nil
}

// cleanup is the janitor's pass: for every shard, the objects its pointer
// does not reference and that are older than the grace period are
// orphans, deleted. The grace period must outlast any exporter's time
// between upload and publish; an hour in production, none here since
// every export is done.
func cleanup(ctx context.Context, sh *shared, db *sql.DB, res *Result) error {
	ts, err := tasks.New(db, tasks.Options{Dialect: fence.SQLite, Lease: taskLease})
	if err != nil {
		return err
	}
	pub := fence.Publisher{Store: sh.objects, Dialect: fence.SQLite}
	res.Exports, res.Pointers = map[string]tasks.Task{}, map[string]fence.Pointer{}
	grace := time.Now()
	for _, k := range exportKeys {
		if res.Exports[k], err = ts.Get(ctx, k); err != nil {
			return err
		}
		for shard := 1; shard <= shards; shard++ {
			name := shardName(k, shard)
			if res.Pointers[name], err = pub.Published(ctx, db, name); err != nil {
				return err
			}
			orphans, err := pub.Orphans(ctx, db, name, grace)
			if err != nil {
				return err
			}
			for _, o := range orphans {
				res.Orphans = append(res.Orphans, o.Name)
				sh.t.Say("janitor: orphan %s (%d bytes, pointer of %s is at token %d) → deleted", o.Name, o.Size, name, res.Pointers[name].Token)
				if err := sh.objects.Delete(ctx, o.Name); err != nil {
					return err
				}
			}
			again, err := pub.Orphans(ctx, db, name, grace)
			if err != nil {
				return err
			}
			res.OrphansAfter += len(again)
		}
	}
	e2 := res.Exports["E-2"]
	sh.t.Say("E-2: %s at epoch %d after %d attempts; shard pointers at tokens %d %d %d %d",
		e2.State, e2.Epoch, e2.Attempts, res.Pointers[shardName("E-2", 1)].Token, res.Pointers[shardName("E-2", 2)].Token,
		res.Pointers[shardName("E-2", 3)].Token, res.Pointers[shardName("E-2", 4)].Token)
	return nil
}
