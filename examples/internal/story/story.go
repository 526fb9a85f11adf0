// Package story prints an example's narration: one line per step, with
// the time since the story began, so a reader sees where the pauses are.
package story

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// Teller writes the lines of one story. It is safe for concurrent use:
// the examples' simulated processes narrate from their own goroutines.
type Teller struct {
	mu    sync.Mutex
	w     io.Writer
	start time.Time
}

// New starts a story on w now.
func New(w io.Writer) *Teller { return &Teller{w: w, start: time.Now()} }

// Say writes one line: the elapsed time, then the formatted text.
func (t *Teller) Say(format string, args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	fmt.Fprintf(t.w, "%5.2fs  %s\n", time.Since(t.start).Seconds(), fmt.Sprintf(format, args...))
}

// Title writes a heading line, without a time.
func (t *Teller) Title(format string, args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	fmt.Fprintf(t.w, "\n== %s\n", fmt.Sprintf(format, args...))
}
