// Package ci ends a scriptcheck test that lacks what its machine must
// give, as baton's testenv.Unavailable does for the other modules (this
// tool module requires none of baton's): it skips by hand and fails under
// CI=true, where scripts/test.sh runs on Debian with /dev/shm.
package ci

import (
	"os"
	"strings"
	"testing"
)

// Unavailable skips t with msg when run by hand, and fails it under CI.
func Unavailable(t testing.TB, msg string) {
	t.Helper()
	if v := strings.ToLower(os.Getenv("CI")); v == "true" || v == "1" {
		t.Fatal(msg + " — fails under CI=true")
	}
	t.Skip(msg)
}
