package drill_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/baton-go/baton/drill"
	"github.com/baton-go/baton/drill/drilltest"
	"github.com/baton-go/baton/fence"
)

// Resource names in histories.
const (
	resFenced   = "res/fenced"
	resUnfenced = "res/unfenced"
)

// counters are the resource of one trial: a fenced counter and its
// unfenced twin (the negative control), by default in one SQLite file in
// the run's kept directory.
type counters struct {
	// spec says where the counters live, for a child process to join
	// them: "sqlite:<path>", "pgx:<url>" or "mysql:<dsn>".
	spec         string
	fName, uName string // resource names, also the Name of their events
	fenced       *drill.Counter
	unfenced     *drill.Counter
}

func newCounters(t *testing.T, run *drilltest.Run) *counters {
	t.Helper()
	return newCountersAt(t, run, "sqlite:"+filepath.Join(run.Dir, "resource.db"), resFenced, resUnfenced)
}

// newCountersFor puts the counters on the database of a SQL engine, the
// fence in the same database as the locks (fence.Table on PostgreSQL or
// MySQL); on other engines they are newCounters'. The names are private to
// the trial: the database outlives it.
func newCountersFor(t *testing.T, run *drilltest.Run, e *engine) *counters {
	t.Helper()
	if e.sql == nil || e.sql.driver == "sqlite" {
		return newCounters(t, run)
	}
	sfx := fmt.Sprintf("/%s/%d", e.name, run.Seed)
	return newCountersAt(t, run, e.sql.driver+":"+e.sql.dsn, resFenced+sfx, resUnfenced+sfx)
}

func newCountersAt(t *testing.T, run *drilltest.Run, spec, fName, uName string) *counters {
	t.Helper()
	db, d, err := openResource(spec)
	if err != nil {
		t.Fatalf("openResource(%q) = %v", spec, err)
	}
	t.Cleanup(func() { db.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := &counters{spec: spec, fName: fName, uName: uName}
	if c.fenced, err = drill.NewCounter(ctx, db, d, fName, true); err != nil {
		t.Fatalf("NewCounter(fenced) = %v", err)
	}
	if c.unfenced, err = drill.NewCounter(ctx, db, d, uName, false); err != nil {
		t.Fatalf("NewCounter(unfenced) = %v", err)
	}
	return c
}

// openResource opens the database of a counters spec.
func openResource(spec string) (*sql.DB, fence.Dialect, error) {
	driver, dsn, _ := strings.Cut(spec, ":")
	switch driver {
	case "sqlite":
		db, err := drill.OpenSQLite(dsn)
		return db, fence.SQLite, err
	case "pgx", "mysql":
		db, err := sql.Open(driver, dsn)
		if err != nil {
			return nil, 0, err
		}
		d, err := fence.DialectOf(db)
		if err != nil {
			db.Close()
			return nil, 0, err
		}
		return db, d, nil
	}
	return nil, 0, fmt.Errorf("resource spec %q: unknown driver", spec)
}

// openCounters joins the counters of spec (in a child process).
func openCounters(spec, fName, uName string) (*counters, *sql.DB, error) {
	db, d, err := openResource(spec)
	if err != nil {
		return nil, nil, err
	}
	return &counters{spec: spec, fName: fName, uName: uName,
		fenced:   drill.OpenCounter(db, d, fName, true),
		unfenced: drill.OpenCounter(db, d, uName, false)}, db, nil
}

// increment does one recorded read-modify-write on both counters.
func (c *counters) increment(ctx context.Context, run *drilltest.Run, client string, token uint64, owner string) (fencedErr, unfencedErr error) {
	return c.fenced.Increment(ctx, run.Rec, client, token, owner), c.unfenced.Increment(ctx, run.Rec, client, token, owner)
}

// check runs the resource checkers: the fenced counter must be
// linearizable and lose nothing (I1, I3). wantControlRed says the fault
// can break exclusion, so the unfenced control must show it.
func (c *counters) check(t *testing.T, run *drilltest.Run, wantControlRed bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	events := run.Rec.Events()
	if res := run.Register(c.fName); !res.Linearizable() {
		t.Errorf("fenced resource: porcupine %s over %d ops, want linearizable (I3)", res.Result, res.Ops)
	}
	fv, err := c.fenced.Value(ctx)
	if err != nil {
		t.Fatalf("fenced Value = %v", err)
	}
	if rep := drill.CheckCounter(events, c.fName, 0, fv); !rep.OK() || rep.Accepted == 0 {
		t.Errorf("fenced resource: %v, want ≥1 accepted and none lost (I1)", rep)
		run.Report(rep.Interleaved)
	}
	uv, err := c.unfenced.Value(ctx)
	if err != nil {
		t.Fatalf("unfenced Value = %v", err)
	}
	rep := drill.CheckCounter(events, c.uName, 0, uv)
	res := run.Register(c.uName)
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
