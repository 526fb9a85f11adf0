package main

import (
	"errors"
	"testing"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/examples/internal/storytest"
)

func TestStory(t *testing.T) {
	res := storytest.Play(t, run)
	const readers = nodes * readersPerNode
	if res.Healthy.Rebuilds != 1 || res.Healthy.Served[rebuilt] != 1 {
		t.Errorf("healthy herd: %d rebuilds, %d readers rebuilt; want 1 and 1", res.Healthy.Rebuilds, res.Healthy.Served[rebuilt])
	}
	// The others served the value they had: stale behind the rebuild, or
	// fresh once it was done (a reader whose attempt met a busy database
	// degrades to stale as well: that is the rule, not a failure).
	if got := res.Healthy.Served[stale] + res.Healthy.Served[fresh] + res.Healthy.Served[degraded]; got != readers-1 {
		t.Errorf("healthy herd: %d readers served without rebuilding, want %d", got, readers-1)
	}
	if res.Down.Rebuilds != 0 || res.Down.Served[degraded] != readers {
		t.Errorf("herd with the lock down: %d rebuilds, %d served stale; want 0 and %d", res.Down.Rebuilds, res.Down.Served[degraded], readers)
	}
	if !errors.Is(res.Down.LockErr, baton.ErrUnavailable) {
		t.Errorf("lock error with the backend down = %v, want %v", res.Down.LockErr, baton.ErrUnavailable)
	}
	if res.Rebuilds != 1 {
		t.Errorf("rebuilds over both herds = %d, want 1", res.Rebuilds)
	}
	// The negative control: the outage is real, and without the rule
	// every reader hits the origin.
	if res.DownNaive.Rebuilds != readers {
		t.Errorf("naive herd with the lock down: %d rebuilds, want %d", res.DownNaive.Rebuilds, readers)
	}
}
