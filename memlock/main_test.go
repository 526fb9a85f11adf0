package memlock_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that no test leaves a goroutine behind: every goroutine
// memlock starts belongs to a Server and ends with its Close.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
