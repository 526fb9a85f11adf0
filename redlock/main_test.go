package redlock_test

import (
	"flag"
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/baton-go/baton/batontest/testenv"
)

func TestMain(m *testing.M) {
	flag.Parse()
	if os.Getenv("BATON_TEST_REDLOCK") == "" && !testenv.CI() && flag.Lookup("test.run").Value.String() == "" {
		fmt.Fprintln(os.Stderr, "redlock: BATON_TEST_REDLOCK not set: examples not run")
		_ = flag.Set("test.run", "^Test")
	}
	goleak.VerifyTestMain(m)
}
