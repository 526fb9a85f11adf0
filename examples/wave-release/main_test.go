package main

import (
	"errors"
	"fmt"
	"testing"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/examples/internal/storytest"
	"github.com/baton-go/baton/tasks"
)

func TestStory(t *testing.T) {
	res := storytest.Play(t, run)
	if res.Epoch2 <= res.Epoch1 {
		t.Errorf("runner-2's epoch %d, want above runner-1's %d", res.Epoch2, res.Epoch1)
	}
	if !errors.Is(res.LateRelease, baton.ErrStaleToken) {
		t.Errorf("runner-1's late release = %v, want %v", res.LateRelease, baton.ErrStaleToken)
	}
	if !res.Runner1Lost {
		t.Errorf("runner-1's leadership was not lost after its pause")
	}
	if res.ResumedAt != 4 {
		t.Errorf("runner-2 resumed W-2 at pick list %d, want 4 (after checkpoint 3)", res.ResumedAt)
	}
	for key, epoch := range map[string]uint64{"W-1": res.Epoch1, "W-2": res.Epoch2} {
		if w := res.Waves[key]; w.State != tasks.Done || w.Epoch != epoch {
			t.Errorf("%s = %s at epoch %d, want DONE at epoch %d", key, w.State, w.Epoch, epoch)
		}
	}
	// Every pick list reached the floor exactly once: none lost at the
	// takeover, none doubled by the late leader.
	want := 0
	for _, w := range waves {
		for pick := 1; pick <= w.picks; pick++ {
			want++
			if n := res.Messages[fmt.Sprintf("%s/%d", w.key, pick)]; n != 1 {
				t.Errorf("pick list %d of %s sent %d times, want 1", pick, w.key, n)
			}
		}
	}
	if len(res.Messages) != want {
		t.Errorf("floor messages for %d pick lists, want %d", len(res.Messages), want)
	}
}
