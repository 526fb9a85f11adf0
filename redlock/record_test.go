package redlock_test

import (
	"testing"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/batontest/testenv"
	"github.com/baton-go/baton/redlock"
	"github.com/baton-go/baton/redlock/redlocktest"
)

// TestHolderRecord: a grant stores the client's holder record
// (Options.Process) in the lock key on the nodes that hold it, and
// Inspect reads it back; the release takes it away with the key.
func TestHolderRecord(t *testing.T) {
	t.Parallel()
	addrs := testenv.Redlock(t)
	p := baton.Process{Host: "web-1", PID: 4242, Program: "worker", Labels: map[string]string{"team": "pay"}}
	c := redlocktest.NewClient(t, addrs, redlocktest.Prefix(t, addrs), redlock.Options{Process: p})
	l := redlocktest.Lock(t, c, "rec")
	es, err := redlock.Inspect(redlocktest.OpCtx(t, 5*time.Second), c, "rec")
	if err != nil {
		t.Fatal(err)
	}
	recorded := 0
	for _, e := range es {
		got := e.Process
		switch {
		case e.Owner != l.Owner():
		case got.Host != p.Host || got.PID != p.PID || got.Program != p.Program || got.Labels["team"] != "pay":
			t.Errorf("node %d: holder record = %+v, want %+v", e.Node, got, p)
		default:
			recorded++
		}
	}
	if recorded < redlock.Majority(c) {
		t.Errorf("%d nodes hold the grant with its record, want ≥ %d: %+v", recorded, redlock.Majority(c), es)
	}
	redlocktest.Release(t, l)
	if es := awaitNoEntries(t, c, "rec", 5*time.Second); len(es) > 0 {
		t.Errorf("entries after the release = %v, want none", es)
	}
}
