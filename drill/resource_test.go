package drill_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/baton-go/baton/drill"
	"github.com/baton-go/baton/fence"
)

// Resource names in histories.
const (
	resFenced   = "res/fenced"
	resUnfenced = "res/unfenced"
)

// counters are the resource of one trial: a fenced counter and its
// unfenced twin (the negative control) in one SQLite file in the run's
// kept directory.
type counters struct {
	path             string
	fenced, unfenced *drill.Counter
}

func newCounters(t *testing.T, run *drill.Run) *counters {
	t.Helper()
	path := filepath.Join(run.Dir, "resource.db")
	db, err := drill.OpenSQLite(path)
	if err != nil {
		t.Fatalf("OpenSQLite = %v", err)
	}
	t.Cleanup(func() { db.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := &counters{path: path}
	if c.fenced, err = drill.NewCounter(ctx, db, fence.SQLite, resFenced, true); err != nil {
		t.Fatalf("NewCounter(fenced) = %v", err)
	}
	if c.unfenced, err = drill.NewCounter(ctx, db, fence.SQLite, resUnfenced, false); err != nil {
		t.Fatalf("NewCounter(unfenced) = %v", err)
	}
	return c
}

// increment does one recorded read-modify-write on both counters.
func (c *counters) increment(ctx context.Context, run *drill.Run, client string, token uint64, owner string) (fencedErr, unfencedErr error) {
	return c.fenced.Increment(ctx, run.Rec, client, token, owner), c.unfenced.Increment(ctx, run.Rec, client, token, owner)
}

// check runs the resource checkers: the fenced counter must be
// linearizable and lose nothing (I1, I3). wantControlRed says the fault
// can break exclusion, so the unfenced control must show it.
func (c *counters) check(t *testing.T, run *drill.Run, wantControlRed bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	events := run.Rec.Events()
	if res := run.Register(resFenced); !res.Linearizable() {
		t.Errorf("fenced resource: porcupine %s over %d ops, want linearizable (I3)", res.Result, res.Ops)
	}
	fv, err := c.fenced.Value(ctx)
	if err != nil {
		t.Fatalf("fenced Value = %v", err)
	}
	if rep := drill.CheckCounter(events, resFenced, 0, fv); !rep.OK() || rep.Accepted == 0 {
		t.Errorf("fenced resource: %v, want ≥1 accepted and none lost (I1)", rep)
		run.Report(rep.Interleaved)
	}
	uv, err := c.unfenced.Value(ctx)
	if err != nil {
		t.Fatalf("unfenced Value = %v", err)
	}
	rep := drill.CheckCounter(events, resUnfenced, 0, uv)
	res := run.Register(resUnfenced)
	switch {
	case wantControlRed && (rep.OK() || res.Linearizable()):
		t.Errorf("negative control: unfenced resource %v, porcupine %s; want lost updates and a non-linearizable history (the drill could not fail)", rep, res.Result)
	case !wantControlRed && !rep.OK():
		t.Errorf("unfenced resource lost updates without a fault that breaks exclusion: %v (the lock itself failed: I1)", rep)
		run.Report(rep.Interleaved)
	default:
		t.Logf("negative control: unfenced %v, porcupine %s", rep, res.Result)
	}
}
