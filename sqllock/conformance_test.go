package sqllock_test

import (
	"testing"

	"github.com/baton-go/baton/batontest"
)

// TestConformance runs baton's mutex conformance suite against the SQL
// engine on PostgreSQL, MariaDB/MySQL and SQLite.
func TestConformance(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) { batontest.TestMutex(t, engine(t, b)) })
	}
}
