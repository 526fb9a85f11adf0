package drill_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/baton-go/baton/drill/drilltest"
	"github.com/baton-go/baton/drill/scenario"
)

// TestScenarioAll runs every scenario of `baton drill` on a queue engine
// (etcd) and a lease engine (PostgreSQL) — or on the engines listed in
// BATON_DRILL_SCENARIO_ENGINES (comma-separated: zk, etcd, postgres,
// mysql, sqlite, redis, redlock); the CLI runs the same code on a user's
// deployment. The fenced counter never accepts a stale write, the
// unfenced twin does after a pause (the danger the fence removes), the
// next holder is granted, and nothing is left on the servers.
func TestScenarioAll(t *testing.T) {
	engines := []string{"etcd", "postgres"}
	if s := os.Getenv("BATON_DRILL_SCENARIO_ENGINES"); s != "" {
		engines = strings.Split(s, ",")
	}
	for _, name := range engines {
		t.Run(name, func(t *testing.T) {
			tg := scenarioTarget(t, scenarioEngine(t, name))
			rep := runScenarios(t, context.Background(), tg, nil)
			if len(rep.Scenarios) != len(scenario.Names()) {
				t.Fatalf("report has %d scenarios, want %d", len(rep.Scenarios), len(scenario.Names()))
			}
			for _, r := range rep.Scenarios {
				checkResult(t, tg, r)
			}
			if !rep.Passed() {
				t.Errorf("Report.Passed() = false")
			}
			if name == "zk" {
				// The lock directories went with Clean.
				conn, _, err := zk.Connect(tg.Addrs, zkTimeout, zk.WithLogger(quietZK{}))
				if err != nil {
					t.Fatal(err)
				}
				defer conn.Close()
				if ok, _, err := conn.Exists("/" + rep.Prefix); ok || err != nil {
					t.Errorf("after the drill, /%s exists: %v (err %v), want it removed", rep.Prefix, ok, err)
				}
			}
		})
	}
}

// runScenarios runs scenarios (nil: all) once each on tg, logging every
// trial's end.
func runScenarios(t *testing.T, ctx context.Context, tg scenario.Target, scenarios []string) scenario.Report {
	t.Helper()
	dir := historyDir(t)
	o := scenario.Options{
		Scenarios: scenarios,
		Trials:    drilltest.Trials(1),
		Seed:      drilltest.BaseSeed(),
		Prefix:    scenario.RandomPrefix(),
		Dir:       dir,
		Progress: func(p scenario.Progress) {
			if p.Done {
				t.Logf("%s trial %d/%d done (err %v)", p.Scenario, p.Trial+1, p.Trials, p.Err)
			}
		},
	}
	t.Logf("seed %d (replay with BATON_DRILL_SEED=%d), prefix %s", o.Seed, o.Seed, o.Prefix)
	rep, err := scenario.Run(ctx, tg, o)
	if err != nil {
		t.Fatalf("Run = %v", err)
	}
	return rep
}

// historyDir is the directory of a test's drill histories (under
// BATON_DRILL_DIR when set), kept when the test fails.
func historyDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp(os.Getenv("BATON_DRILL_DIR"), "baton-scenario-*")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("drill histories kept in %s", dir)
			return
		}
		os.RemoveAll(dir)
	})
	return dir
}

func checkResult(t *testing.T, tg scenario.Target, r scenario.Result) {
	t.Helper()
	if r.Skipped != "" {
		// Transport faults need a transport; a lease engine's waiter has
		// no session to expire.
		if len(tg.Addrs) > 0 && (r.Name != "waiter-expiry" || tg.Family != scenario.Lease) {
			t.Errorf("%s skipped on %s: %s", r.Name, tg.Engine, r.Skipped)
		}
		t.Logf("%s skipped: %s", r.Name, r.Skipped)
		return
	}
	t.Logf("%s: trials %d, stale accepted fenced %d unfenced %d, next grant %v, lost lead %v, orphans %d",
		r.Name, r.Trials, r.FencedStaleAccepted, r.UnfencedStaleAccepted, r.NextGrant, r.LostLead, r.Orphans)
	if !r.Passed {
		t.Errorf("%s failed (history %s):\n%s", r.Name, r.History, strings.Join(r.Violations, "\n"))
	}
	if r.FencedStaleAccepted != 0 {
		t.Errorf("%s: the fenced resource accepted %d stale writes, want 0", r.Name, r.FencedStaleAccepted)
	}
	if r.Name == "paused" && r.UnfencedStaleAccepted == 0 {
		t.Errorf("paused: the unfenced twin accepted no stale write: the pause was not exercised")
	}
	if r.Orphans != 0 {
		t.Errorf("%s: %d orphans, want 0", r.Name, r.Orphans)
	}
	if len(r.NextGrant) != r.Trials {
		t.Errorf("%s: next grant measured in %d of %d trials", r.Name, len(r.NextGrant), r.Trials)
	}
	if len(r.Timelines) != r.Trials || len(r.Timelines[0].Spans) == 0 {
		t.Errorf("%s: timelines %+v, want one per trial with spans", r.Name, r.Timelines)
	}
}

// TestScenarioCancel cancels a drill while its holder child is frozen:
// Run returns promptly with the context's error and the partial report,
// and nothing is left on the server under the drill's names — on a
// lease engine too, where a frozen holder's expired row stays listed
// until someone takes the lock over.
func TestScenarioCancel(t *testing.T) {
	for _, name := range []string{"etcd", "postgres"} {
		t.Run(name, func(t *testing.T) { cancelScenario(t, scenarioTarget(t, scenarioEngine(t, name))) })
	}
}

func cancelScenario(t *testing.T, tg scenario.Target) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	prefix := scenario.RandomPrefix()
	started := make(chan struct{}, 1)
	o := scenario.Options{
		Scenarios: []string{"paused", "killed"},
		Trials:    1,
		Seed:      drilltest.BaseSeed(),
		Prefix:    prefix,
		Dir:       t.TempDir(),
		Progress: func(p scenario.Progress) {
			if !p.Done {
				select {
				case started <- struct{}{}:
				default:
				}
			}
		},
	}
	type result struct {
		rep scenario.Report
		err error
	}
	done := make(chan result, 1)
	go func() { rep, err := scenario.Run(ctx, tg, o); done <- result{rep, err} }()
	<-started
	// The holder is granted and frozen by then (the waiter waits for its
	// expiry): cancel mid-scenario.
	time.Sleep(tg.TTL)
	cancel()
	cancelled := time.Now()
	var r result
	select {
	case r = <-done:
	case <-time.After(3*tg.TTL + 10*time.Second):
		t.Fatalf("Run still running %v after its context was cancelled", 3*tg.TTL+10*time.Second)
	}
	took := time.Since(cancelled)
	t.Logf("Run returned %v after the cancel: %v", took, r.err)
	if !errors.Is(r.err, context.Canceled) {
		t.Errorf("Run = %v, want context.Canceled", r.err)
	}
	// Leftovers of a killed child go with its session: the scan waits for
	// them, so Run may take up to a TTL or two.
	if limit := 3*tg.TTL + 2*time.Second; took > limit {
		t.Errorf("Run returned %v after the cancel, want ≤ %v", took, limit)
	}
	if len(r.rep.Scenarios) != 1 || r.rep.Scenarios[0].Name != "paused" {
		t.Errorf("partial report = %+v, want the interrupted paused scenario only", r.rep.Scenarios)
	}
	sctx, scancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer scancel()
	for _, s := range []string{"paused", "killed"} {
		name := scenario.LockName(prefix, s, 0)
		if es, err := tg.Scan(sctx, name); err != nil || len(es) != 0 {
			t.Errorf("after the cancelled drill, %s holds %v (scan error %v), want nothing", name, es, err)
		}
	}
}
