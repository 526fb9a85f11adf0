package queuekit_test

import (
	"fmt"
	"testing"

	"github.com/baton-go/baton"
)

// TestMemRWWriterNotStarved: while a reader holds, a queued writer makes
// every reader that arrives after it wait; the writer is granted at the
// first reader's release, and the readers behind it share the read after
// its release.
func TestMemRWWriterNotStarved(t *testing.T) {
	const later = 3
	srv, _ := memServer(t)
	r1, err := srv.Client("r1").RWMutex("rw")
	if err != nil {
		t.Fatalf("RWMutex = %v", err)
	}
	w, _ := srv.Client("w").RWMutex("rw")
	l1 := memStart(t, r1.RLock, nil).granted(t, "r1: RLock")
	ww := memStart(t, w.Lock, nil)
	memQueued(t, srv, "rw", "r1", "w")

	owners := []string{"r1", "w"}
	var readers []*memCall
	for i := range later {
		name := fmt.Sprintf("r%d", i+2)
		rw, _ := srv.Client(name).RWMutex("rw")
		readers = append(readers, memStart(t, rw.RLock, nil))
		owners = append(owners, name)
		memQueued(t, srv, "rw", owners...)
	}
	ww.waiting(t, "w: Lock while r1 reads")
	for _, r := range readers {
		r.waiting(t, "RLock behind a queued writer")
	}

	memRelease(t, l1)
	lw := ww.granted(t, "w: Lock after r1's release")
	for _, r := range readers {
		r.waiting(t, "RLock while the writer holds")
	}
	memRelease(t, lw)
	var ls []*baton.Lease
	for _, r := range readers {
		l := r.granted(t, "RLock after the writer's release")
		ls = append(ls, l)
	}
	// Creates 1 (r1), 2 (w), 3–5 (readers); r1's delete 6 grants w; w's
	// delete 7 grants every reader behind it with the same read.
	memTokens(t, []uint64{1, 6}, l1, lw)
	memTokens(t, []uint64{7, 7, 7}, ls...)
	for _, l := range ls {
		memRelease(t, l)
	}
	memOwners(t, srv, "rw")
}
