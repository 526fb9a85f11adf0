package story

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
)

// Main is an example command's main: it plays run once, narrating to
// standard output, in a fresh temporary directory that it removes
// afterwards, and exits 1 with name and the error if the story failed.
// An interrupt cancels the story's context, so its processes close.
func Main[R any](name string, run func(ctx context.Context, w io.Writer, dir string) (R, error)) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	dir, err := os.MkdirTemp("", "baton-"+name+"-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	_, err = run(ctx, os.Stdout, dir)
	os.RemoveAll(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, name+":", err)
		os.Exit(1)
	}
}
