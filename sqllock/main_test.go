package sqllock_test

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that no goroutine a Client started outlives it: the
// keeper's two, the shared LISTEN connection's, and Election.Observe's.
func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		// toxiproxy can leave a link's pipe goroutine blocked after a
		// blackholed link is cut (see drill/main_test.go): the fault
		// tool's, not baton's.
		if err := goleak.Find(
			goleak.IgnoreTopFunction("github.com/Shopify/toxiproxy/v2/toxics.(*NoopToxic).Pipe"),
			goleak.IgnoreTopFunction("github.com/Shopify/toxiproxy/v2/toxics.(*LatencyToxic).Pipe"),
		); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}
