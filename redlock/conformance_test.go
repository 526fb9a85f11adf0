package redlock_test

import (
	"testing"

	"github.com/baton-go/baton/batontest"
)

// TestConformance runs baton's mutex conformance suite against Redlock on
// five independent redis-servers.
func TestConformance(t *testing.T) { batontest.TestMutex(t, suiteEngine(t)) }
