// Package storytest runs an example's story from its test.
package storytest

import (
	"context"
	"io"
	"testing"
)

// Play runs an example's story in a temporary directory of t, its
// narration discarded, and returns what it left behind for the test to
// check. A story that fails ends the test.
func Play[R any](t *testing.T, run func(ctx context.Context, w io.Writer, dir string) (R, error)) R {
	t.Helper()
	res, err := run(t.Context(), io.Discard, t.TempDir())
	if err != nil {
		t.Fatalf("run = %v", err)
	}
	return res
}
