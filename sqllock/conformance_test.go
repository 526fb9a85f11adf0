package sqllock_test

import (
	"testing"

	"github.com/baton-go/baton/batontest"
)

// TestConformance runs baton's conformance suites (mutex, read/write lock,
// semaphore, election) against the SQL engine on PostgreSQL, MariaDB/MySQL
// and SQLite.
func TestConformance(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			e := engine(t, b)
			t.Run("Mutex", func(t *testing.T) { batontest.TestMutex(t, e) })
			t.Run("RWMutex", func(t *testing.T) { batontest.TestRWMutex(t, e) })
			t.Run("Semaphore", func(t *testing.T) { batontest.TestSemaphore(t, e) })
			t.Run("Election", func(t *testing.T) { batontest.TestElection(t, e) })
		})
	}
}
