package main

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that the story leaves no goroutine behind: every
// simulated process, lock keeper and connection pool is closed.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
