package redlock_test

import (
	"flag"
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/baton-go/baton/internal/testenv"
)

func TestMain(m *testing.M) {
	flag.Parse()
	if os.Getenv("BATON_TEST_REDLOCK") == "" && !testenv.CI() && flag.Lookup("test.run").Value.String() == "" {
		fmt.Fprintln(os.Stderr, "redlock: BATON_TEST_REDLOCK not set: examples not run")
		_ = flag.Set("test.run", "^Test")
	}
	goleak.VerifyTestMain(m,
		// toxiproxy's in-process proxies: a blackholed link's pipe may
		// stay blocked after the proxy is closed (the fault tool's, not
		// baton's; see drill's TestMain).
		goleak.IgnoreAnyFunction("github.com/Shopify/toxiproxy/v2.(*ToxicCollection).StartLink"),
		goleak.IgnoreAnyFunction("github.com/Shopify/toxiproxy/v2.(*Proxy).server"),
		goleak.IgnoreTopFunction("github.com/Shopify/toxiproxy/v2/toxics.(*NoopToxic).Pipe"),
	)
}
