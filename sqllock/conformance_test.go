package sqllock_test

import (
	"testing"

	"github.com/baton-go/baton/batontest"
)

// TestConformance runs baton's conformance suites (mutex, read/write lock,
// semaphore, election) against the SQL engine on PostgreSQL, MariaDB/MySQL
// and SQLite; on MariaDB a second time with the tokens from MySQL's
// counter table instead of the sequence (tables of their own: the
// sequence's migration retires the counter of its tables).
func TestConformance(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) { conform(t, engine(t, b)) })
		if b.name == "mysql" {
			t.Run("mysql-counter", func(t *testing.T) { conform(t, engineOn(t, b, "baton_counter_", true)) })
		}
	}
}

func conform(t *testing.T, e batontest.Engine) {
	t.Run("Mutex", func(t *testing.T) { batontest.TestMutex(t, e) })
	t.Run("RWMutex", func(t *testing.T) { batontest.TestRWMutex(t, e) })
	t.Run("Semaphore", func(t *testing.T) { batontest.TestSemaphore(t, e) })
	t.Run("Election", func(t *testing.T) { batontest.TestElection(t, e) })
}
