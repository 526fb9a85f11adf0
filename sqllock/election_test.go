package sqllock_test

import (
	"testing"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/sqllock"
)

// TestLeaderEntryPerLeadership: Leader's Entry names one leadership: a
// later leader at the slot an earlier one freed has another Entry.
func TestLeaderEntryPerLeadership(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			db, _ := b.open(t, false)
			c := newClient(t, db, sqllock.Options{})
			name := uniqueName("entry")
			ctx := opCtx(t, 20*time.Second)
			var entries []string
			for range 2 {
				e, err := c.Election(name)
				if err != nil {
					t.Fatal(err)
				}
				ld, err := e.Campaign(ctx)
				if err != nil {
					t.Fatalf("Campaign() = %v", err)
				}
				cur, err := e.Leader(ctx)
				if err != nil {
					t.Fatalf("Leader() = %v", err)
				}
				entries = append(entries, cur.Entry)
				if err := ld.Resign(ctx, baton.ResignPlan{}); err != nil {
					t.Fatalf("Resign() = %v", err)
				}
			}
			if entries[0] == entries[1] {
				t.Errorf("two leaderships both have Entry %q, want one each", entries[0])
			}
		})
	}
}
