package sqllock_test

import (
	"testing"
	"time"

	"github.com/baton-go/baton/sqllock"
)

// TestMigrateThenFirstUse: a client whose schema came from its own
// Migrate still prepares itself at its first use: it identifies its
// server and table, which the wake-ups (and PostgreSQL's LISTEN) need.
func TestMigrateThenFirstUse(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			db, _ := b.open(t, false)
			c := newClient(t, db, sqllock.Options{})
			if err := c.Migrate(opCtx(t, 10*time.Second)); err != nil {
				t.Fatalf("Migrate() = %v", err)
			}
			if err := lock(t, c, uniqueName("migrated")).Release(opCtx(t, 5*time.Second)); err != nil {
				t.Fatalf("Release() = %v", err)
			}
			if !sqllock.Identified(c) {
				t.Errorf("after Migrate and a lock the client has not identified its table: no wake-ups between its waiters")
			}
		})
	}
}
