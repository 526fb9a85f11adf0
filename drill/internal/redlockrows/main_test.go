// Package redlock_test holds redlock's fault-row tests that judge their
// histories with the drill's checkers. They live in the drill module, which
// alone may require the checkers' dependencies (porcupine); redlock's own
// test helpers reach them through testkit/redlocktest.
package redlock_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that no goroutine outlives the tests.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
