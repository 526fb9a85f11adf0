package main

import (
	"slices"
	"testing"

	"github.com/baton-go/baton/examples/internal/storytest"
	"github.com/baton-go/baton/tasks"
)

func TestStory(t *testing.T) {
	res := storytest.Play(t, run)
	if res.MostRunning < 1 || res.MostRunning > permits {
		t.Errorf("at most %d exports ran at once, want 1..%d", res.MostRunning, permits)
	}
	if res.Killed == "" {
		t.Fatalf("no exporter was killed: the takeover was not exercised")
	}
	for _, k := range exportKeys {
		if got := res.Exports[k].State; got != tasks.Done {
			t.Errorf("export %s = %s, want %s", k, got, tasks.Done)
		}
	}
	e2 := res.Exports["E-2"]
	if e2.Attempts < 2 {
		t.Errorf("E-2 attempts = %d, want at least 2 (a claim and a takeover)", e2.Attempts)
	}
	// Shards 1 and 2 stay as the killed exporter published them; 3 and 4
	// were published after the takeover, with newer tokens.
	for shard := 1; shard <= shards; shard++ {
		p := res.Pointers[shardName("E-2", shard)]
		if shard <= 2 && p.Token != res.KilledToken || shard > 2 && p.Token <= res.KilledToken {
			t.Errorf("E-2 shard %d published at token %d; the killed exporter's token is %d", shard, p.Token, res.KilledToken)
		}
	}
	if e2.Epoch <= res.KilledToken {
		t.Errorf("E-2 done at epoch %d, want above the killed exporter's %d", e2.Epoch, res.KilledToken)
	}
	if res.KilledObject == "" || !slices.Contains(res.Orphans, res.KilledObject) {
		t.Errorf("orphans = %v, want them to include %q (the killed exporter's unpublished upload)", res.Orphans, res.KilledObject)
	}
	if res.OrphansAfter != 0 {
		t.Errorf("%d orphans left after the cleanup, want 0", res.OrphansAfter)
	}
}
