package sqllock_test

import (
	"testing"

	"github.com/baton-go/baton/batontest"
)

// TestConformanceCounter runs baton's conformance suites (mutex,
// read/write lock, semaphore, election) on MariaDB with the tokens from
// MySQL's counter table instead of the sequence, on tables of their own
// (the sequence's migration retires the counter of its tables). The
// suites' runs on each database's default tables are testkit/conformance's
// postgres, mysql and sqlite rows, through baton.Open.
func TestConformanceCounter(t *testing.T) {
	for _, b := range backends(t) {
		if b.name == "mysql" {
			conform(t, engineOn(t, b, "baton_counter_", true))
		}
	}
}

func conform(t *testing.T, e batontest.Engine) {
	t.Run("Mutex", func(t *testing.T) { batontest.TestMutex(t, e) })
	t.Run("RWMutex", func(t *testing.T) { batontest.TestRWMutex(t, e) })
	t.Run("Semaphore", func(t *testing.T) { batontest.TestSemaphore(t, e) })
	t.Run("Election", func(t *testing.T) { batontest.TestElection(t, e) })
}
