package scenario

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/baton-go/baton/drill"
	"github.com/baton-go/baton/engine"
	"github.com/baton-go/baton/fence"
)

// resourceFile is the SQLite database of a drill's counters, in
// Options.Dir; holder children open the same file.
const resourceFile = "resource.db"

// Run runs the selected scenarios on t, each Options.Trials times (trial
// i with seed Options.Seed+i), and reports what they found. A scenario
// that does not apply to t is reported with Skipped.
//
// Every lock name is LockName(Options.Prefix, scenario, trial); after each
// trial Run closes what it started and scans the names it used until the
// servers hold nothing under them or 3×TTL has passed (what is left is
// Result.Orphans). When ctx is cancelled Run stops the running trial —
// children thawed and killed, in-process leases released, proxies and
// clients closed, its name scanned for leftovers — and returns the report
// so far with ctx's error. At the end, cancelled or not, it calls
// t.Clean. Errors about o or t wrap ErrOptions.
func Run(ctx context.Context, t Target, o Options) (Report, error) {
	rep := Report{Engine: t.Engine, Seed: o.Seed, Prefix: o.Prefix}
	run, err := o.validate(t)
	if err != nil {
		return rep, err
	}
	if o.Herd == 0 {
		o.Herd = DefaultHerd
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return rep, err
	}
	dbPath := filepath.Join(o.Dir, resourceFile)
	db, err := drill.OpenSQLite(dbPath)
	if err != nil {
		return rep, err
	}
	defer func() {
		db.Close()
		if !o.Keep {
			for _, suffix := range []string{"", "-wal", "-shm"} {
				os.Remove(dbPath + suffix)
			}
		}
	}()
	for _, s := range run {
		rep.Scenarios = append(rep.Scenarios, runScenario(ctx, t, o, s, db, dbPath))
		if ctx.Err() != nil {
			break
		}
	}
	return rep, errors.Join(ctx.Err(), clean(ctx, t, o.Prefix))
}

// clean runs t.Clean on prefix, with a context of its own: a cancelled
// drill cleans up too.
func clean(ctx context.Context, t Target, prefix string) error {
	if t.Clean == nil {
		return nil
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second+3*t.TTL)
	defer cancel()
	if err := t.Clean(cctx, prefix); err != nil {
		return fmt.Errorf("scenario: clean %q: %w", prefix, err)
	}
	return nil
}

// runScenario runs the trials of one scenario and sums them up.
func runScenario(ctx context.Context, t Target, o Options, s spec, db *sql.DB, dbPath string) Result {
	r := Result{Name: s.name, Engine: t.Engine, Passed: true}
	if s.skip != nil {
		if why := s.skip(t); why != "" {
			r.Skipped = why
			return r
		}
	}
	for i := range o.Trials {
		if ctx.Err() != nil {
			break
		}
		progress(o, Progress{Scenario: s.name, Trial: i, Trials: o.Trials})
		out := runTrial(ctx, t, o, s, i, db, dbPath)
		r.Trials++
		r.FencedStaleAccepted += out.fencedStale
		r.UnfencedStaleAccepted += out.unfencedStale
		if out.nextGrant >= 0 {
			r.NextGrant = append(r.NextGrant, out.nextGrant)
		}
		if out.hasLead {
			r.LostLead = append(r.LostLead, out.lostLead)
		}
		r.Orphans += out.orphans
		r.Timelines = append(r.Timelines, out.timeline)
		if ctx.Err() != nil {
			r.Interrupted = true
			progress(o, Progress{Scenario: s.name, Trial: i, Trials: o.Trials, Done: true, Interrupted: true})
			break
		}
		for _, v := range out.violations {
			r.Violations = append(r.Violations, fmt.Sprintf("trial %d (seed %d): %s", i, out.timeline.Seed, v))
		}
		var err error
		if len(out.violations) > 0 {
			r.Passed = false
			if r.History == "" {
				r.History = out.history
			}
			err = errors.New(strings.Join(out.violations, "; "))
		}
		progress(o, Progress{Scenario: s.name, Trial: i, Trials: o.Trials, Done: true, Err: err})
	}
	return r
}

func progress(o Options, p Progress) {
	if o.Progress != nil {
		o.Progress(p)
	}
}

// outcome is what one trial found.
type outcome struct {
	fencedStale, unfencedStale int
	nextGrant                  time.Duration // -1: no next grant measured
	lostLead                   time.Duration
	hasLead                    bool
	orphans                    int
	violations                 []string
	timeline                   Timeline
	history                    string // the kept history file, "" if removed
}

// runTrial runs trial i of s and checks its history.
func runTrial(ctx context.Context, t Target, o Options, s spec, i int, db *sql.DB, dbPath string) outcome {
	seed := o.Seed + uint64(i)
	tr, err := newTrial(ctx, t, o, s, i, seed, db, dbPath)
	if err != nil {
		return outcome{nextGrant: -1, violations: []string{"drill: " + err.Error()}, timeline: Timeline{Trial: i, Seed: seed}}
	}
	if err := s.run(tr); err != nil {
		if ctx.Err() != nil {
			tr.violate("drill", "interrupted: %v", ctx.Err())
		} else {
			tr.violate("drill", "%v", err)
		}
	}
	tr.close()
	if ctx.Err() != nil {
		tr.sweep(ctx)
	}
	out := tr.check(ctx)
	out.history = tr.history
	if len(out.violations) == 0 && !o.Keep {
		os.Remove(tr.history)
		out.history = ""
	}
	return out
}

// newTrial prepares trial i of s: its history file, its counters (reset)
// and its lock name.
func newTrial(ctx context.Context, t Target, o Options, s spec, i int, seed uint64, db *sql.DB, dbPath string) (*trial, error) {
	name, err := engine.ValidateName(LockName(o.Prefix, s.name, i))
	if err != nil {
		return nil, err
	}
	hist := filepath.Join(o.Dir, fmt.Sprintf("%s-%d.jsonl", s.name, i))
	f, err := os.Create(hist)
	if err != nil {
		return nil, err
	}
	tr := &trial{
		t: t, spec: s, index: i, seed: seed, name: name, herd: o.Herd,
		rand: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		rec:  drill.NewRecorder(f), file: f, history: hist, dbPath: dbPath,
	}
	tr.ctx, tr.cancel = context.WithCancel(ctx)
	tr.rec.Record(drill.Event{Client: "drill", Op: drill.OpSeed, Phase: drill.Info, Value: drill.Int(int64(seed)), Detail: t.Engine + " " + name})
	// The counters' names are resource keys, not lock names.
	if tr.fenced, err = drill.NewCounter(ctx, db, fence.SQLite, name+"#fenced", true); err == nil {
		tr.unfenced, err = drill.NewCounter(ctx, db, fence.SQLite, name+"#unfenced", false)
	}
	if err != nil {
		tr.cancel()
		f.Close()
		return nil, fmt.Errorf("resource: %w", err)
	}
	return tr, nil
}
