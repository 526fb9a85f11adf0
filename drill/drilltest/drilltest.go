// Package drilltest binds package drill's trials to Go tests: the seed of a
// trial and its replay (BATON_DRILL_SEED), the number of trials
// (BATON_DRILL_TRIALS), a history directory kept when the test fails, and
// violations reported as test errors. It is apart from package drill so
// that a program linking drill (the CLI's `baton drill`) does not link
// package testing.
package drilltest

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/baton-go/baton/drill"
)

// Trials returns how many seeded trials a scenario runs: def (CI keeps
// it small), or BATON_DRILL_TRIALS for the long randomized drill
// (scripts/drill.sh sets 50).
func Trials(def int) int {
	if n, err := strconv.Atoi(os.Getenv("BATON_DRILL_TRIALS")); err == nil && n > 0 {
		return n
	}
	return def
}

// BaseSeed returns BATON_DRILL_SEED when set (to replay a failing trial),
// else a seed from the clock. Trial i of a scenario uses BaseSeed()+i.
func BaseSeed() uint64 {
	if s, err := strconv.ParseUint(os.Getenv("BATON_DRILL_SEED"), 10, 64); err == nil {
		return s
	}
	return uint64(time.Now().UnixNano())
}

// Run is one trial's bookkeeping: its seed and random source, and a
// Recorder writing history.jsonl into a directory that is removed when the
// test passes and kept (its path logged) when it fails, or always with
// BATON_DRILL_KEEP=1. BATON_DRILL_DIR picks the parent directory.
type Run struct {
	T    testing.TB
	Dir  string
	Seed uint64
	Rand *rand.Rand
	Rec  *drill.Recorder
}

// Start begins a trial of t with seed, logging the seed so that
// BATON_DRILL_SEED replays it.
func Start(t testing.TB, seed uint64) *Run {
	t.Helper()
	parent := os.Getenv("BATON_DRILL_DIR")
	if parent != "" {
		if err := os.MkdirAll(parent, 0o755); err != nil {
			t.Fatalf("BATON_DRILL_DIR: %v", err)
		}
	}
	// No '#' or '?' (t.Name() has "#00" for unnamed subtests): the
	// directory ends up in OpenSQLite's file: URI, where '#' would cut the
	// path short and every trial of a test, in every concurrent run, would
	// share one database beside the directory.
	pattern := "baton-drill-" + strings.NewReplacer("/", "_", " ", "_", "#", "", "?", "_").Replace(t.Name()) + "-*"
	dir, err := os.MkdirTemp(parent, pattern)
	if err != nil {
		t.Fatalf("drill: history directory: %v", err)
	}
	f, err := os.Create(filepath.Join(dir, "history.jsonl"))
	if err != nil {
		t.Fatalf("drill: history file: %v", err)
	}
	r := &Run{T: t, Dir: dir, Seed: seed, Rand: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), Rec: drill.NewRecorder(f)}
	t.Logf("drill seed %d (replay with BATON_DRILL_SEED=%d)", seed, seed)
	r.Rec.Record(drill.Event{Client: "drill", Op: drill.OpSeed, Phase: drill.Info, Value: drill.Int(int64(seed)), Detail: t.Name()})
	t.Cleanup(func() {
		f.Close()
		if err := r.Rec.Err(); err != nil {
			t.Errorf("drill: %v", err)
		}
		if t.Failed() || os.Getenv("BATON_DRILL_KEEP") != "" {
			t.Logf("drill history kept in %s (seed %d)", dir, seed)
			return
		}
		os.RemoveAll(dir)
	})
	return r
}

// Report fails the test with every violation.
func (r *Run) Report(vs []drill.Violation) {
	r.T.Helper()
	for _, v := range vs {
		r.T.Errorf("%s", v)
	}
}

// Register checks resource's history against FencedRegister. When the
// history is not linearizable it writes porcupine's visualisation next to
// the history. It fails the test only on a check that could not run; the
// caller asserts the result (true for fenced resources, false for the
// unfenced control after a fault).
func (r *Run) Register(resource string) drill.RegisterResult {
	r.T.Helper()
	res, err := drill.CheckRegister(r.Rec.Events(), resource, time.Minute)
	if err != nil {
		r.T.Fatalf("CheckRegister(%q): %v", resource, err)
	}
	if !res.Linearizable() {
		p := filepath.Join(r.Dir, strings.ReplaceAll(resource, "/", "_")+".html")
		if err := res.Visualize(p); err != nil {
			r.T.Errorf("porcupine visualisation: %v", err)
		} else {
			r.T.Logf("porcupine: %q is %s; visualisation %s", resource, res.Result, p)
		}
	}
	return res
}
