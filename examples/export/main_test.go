package main

import (
	"io"
	"slices"
	"testing"

	"github.com/baton-go/baton/tasks"
)

func TestStory(t *testing.T) {
	res, err := run(t.Context(), io.Discard, t.TempDir())
	if err != nil {
		t.Fatalf("run = %v", err)
	}
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
	if e2.Attempts != 2 {
		t.Errorf("E-2 attempts = %d, want 2 (a claim and a takeover)", e2.Attempts)
	}
	// Shards 1 and 2 stay as the killed exporter published them; 3 and 4
	// were published by the exporter that took over, with a newer token.
	for shard := 1; shard <= shards; shard++ {
		want := e2.Epoch
		if shard <= 2 {
			want = res.KilledToken
		}
		if p := res.Pointers[shardName("E-2", shard)]; p.Token != want {
			t.Errorf("E-2 shard %d published at token %d, want %d", shard, p.Token, want)
		}
	}
	if e2.Epoch <= res.KilledToken {
		t.Errorf("E-2 taken over at epoch %d, want above the killed exporter's %d", e2.Epoch, res.KilledToken)
	}
	if want := []string{res.KilledObject}; !slices.Equal(res.Orphans, want) {
		t.Errorf("orphans = %v, want %v (the killed exporter's unpublished upload)", res.Orphans, want)
	}
	if res.OrphansAfter != 0 {
		t.Errorf("%d orphans left after the cleanup, want 0", res.OrphansAfter)
	}
}
