package memlock_test

import (
	"testing"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/batontest"
	"github.com/baton-go/baton/internal/recorder"
	"github.com/baton-go/baton/memlock"
)

// conformanceTTL is the session TTL of the conformance clients. The suite
// waits for real expiry, so it runs on the real clock; memlock expires a
// session exactly on time, so a short TTL suffices.
const conformanceTTL = 500 * time.Millisecond

// TestConformanceObserved runs the suites with an Observer on every
// acquire and lease: observation must not change the contract, and the
// events of the whole run must pair up (see checkPairs). The suites' run
// without one is testkit/conformance's mem row, through baton.Open.
func TestConformanceObserved(t *testing.T) {
	rec := recorder.New()
	t.Run("suite", func(t *testing.T) { conformance(t, rec) })
	checkPairs(t, rec.Events())
}

// checkPairs checks that every acquire reported its start once and then
// exactly one outcome (a grant or a failure), and that every lease a fresh
// grant made ended at most once (Lost or Released) and reported nothing
// after its end.
func checkPairs(t *testing.T, events []baton.Event) {
	t.Helper()
	type acq struct{ started, outcomes, ends int }
	seen := map[uint64]*acq{}
	for _, e := range events {
		a := seen[e.Acquire]
		if a == nil {
			a = &acq{}
			seen[e.Acquire] = a
		}
		if a.ends > 0 {
			t.Errorf("acquire %d: %v after its lease ended", e.Acquire, e.Kind)
		}
		switch e.Kind {
		case baton.EventAcquireStarted:
			a.started++
		case baton.EventGranted, baton.EventAcquireFailed:
			a.outcomes++
		case baton.EventLost, baton.EventReleased:
			a.ends++
		}
	}
	if len(seen) == 0 {
		t.Fatal("the suite reported no events")
	}
	for id, a := range seen {
		if a.started != 1 || a.outcomes != 1 || a.ends > 1 {
			t.Errorf("acquire %d: %d starts, %d outcomes, %d ends; want 1, 1, at most 1", id, a.started, a.outcomes, a.ends)
		}
	}
}

func conformance(t *testing.T, o baton.Observer) {
	for _, tc := range []struct {
		name string
		run  func(*testing.T, batontest.Engine)
	}{
		{"Mutex", batontest.TestMutex},
		{"RWMutex", batontest.TestRWMutex},
		{"Semaphore", batontest.TestSemaphore},
		{"Election", batontest.TestElection},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.run(t, engine(t, o))
		})
	}
}

// engine describes a fresh memlock server, closed at the end of t, to the
// suite.
func engine(t *testing.T, o baton.Observer) batontest.Engine {
	srv := memlock.NewServer(memlock.Options{SessionTTL: conformanceTTL, Observer: o})
	t.Cleanup(srv.Close)
	names := func(dir string) []string {
		var out []string
		for _, e := range srv.Entries(dir) {
			out = append(out, e.Name)
		}
		return out
	}
	return batontest.Engine{
		Name: "mem",
		NewClient: func(testing.TB) batontest.Client {
			c := srv.Client("")
			return batontest.FromClient(c, func(testing.TB) { ctl(c).Partition() })
		},
		Entries: func(_ testing.TB, name string) []string { return names(name) },
		SemaphoreEntries: func(_ testing.TB, name string) []string {
			var out []string
			for _, sub := range []string{"locks", "leases"} {
				for _, e := range names(name + "/" + sub) {
					out = append(out, sub+"/"+e)
				}
			}
			return out
		},
		SessionTTL: conformanceTTL,
	}
}
