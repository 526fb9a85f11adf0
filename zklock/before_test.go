package zklock

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/baton-go/baton/batontest/testenv"
	"github.com/baton-go/baton/engine/queuekit"
)

// TestListBeforeWindow checks the window a waiter reads: the newest
// entries before its own, whatever order getChildren returns them in,
// with Partial and Ahead telling what was left out, the same token List
// gives, and a reader seeing every entry before it.
func TestListBeforeWindow(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	c, err := dial(ctx, []string{testenv.ZK(t)}, Options{SessionTimeout: 2 * time.Second})
	if err != nil {
		t.Fatalf("Dial = %v", err)
	}
	defer c.Close()
	s, err := c.session(ctx)
	if err != nil {
		t.Fatalf("session = %v", err)
	}
	name := "baton-test/ListBeforeWindow/" + newUUID()[:8]
	kinds := []queuekit.Kind{queuekit.KindWrite, queuekit.KindRead, queuekit.KindRead, queuekit.KindWrite, queuekit.KindRead, queuekit.KindRead, queuekit.KindRead}
	es := make([]queuekit.Entry, len(kinds))
	for i, k := range kinds {
		if es[i], err = s.Enqueue(ctx, name, k); err != nil {
			t.Fatalf("Enqueue %d = %v", i, err)
		}
	}
	keys := func(snap queuekit.Snapshot) []string {
		var ks []string
		for _, e := range snap.Entries {
			ks = append(ks, e.Key)
		}
		return ks
	}
	check := func(what string, own queuekit.Entry, n int, want []queuekit.Entry, partial bool, ahead int) {
		t.Helper()
		snap, err := s.ListBefore(ctx, name, own, n)
		if err != nil {
			t.Fatalf("%s: ListBefore = %v", what, err)
		}
		full, err := s.List(ctx, name, own)
		if err != nil {
			t.Fatalf("%s: List = %v", what, err)
		}
		var wk []string
		for _, e := range want {
			wk = append(wk, e.Key)
		}
		if got := keys(snap); !slices.Equal(got, wk) || snap.Own != len(want)-1 || snap.Partial != partial || snap.Ahead != ahead || snap.Token != full.Token {
			t.Fatalf("%s: ListBefore(n=%d) = %v own %d partial %v ahead %d token %d; want %v own %d partial %v ahead %d token %d",
				what, n, got, snap.Own, snap.Partial, snap.Ahead, snap.Token, wk, len(want)-1, partial, ahead, full.Token)
		}
		for i, e := range snap.Entries {
			if e.Kind != want[i].Kind || e.Seq != want[i].Seq {
				t.Fatalf("%s: entry %d = %+v, want %+v", what, i, e, want[i])
			}
		}
	}
	w := es[3] // a writer: its rule reads one window
	check("head", es[0], 1, es[:1], false, 0)
	check("writer, newest one", w, 1, es[2:4], true, 3)
	check("writer, newest two", w, 2, es[1:4], true, 3)
	check("writer, all", w, 8, es[:4], false, 0)
	check("reader reads back past readers", es[6], 1, es[:7], false, 0)

	// A predecessor that leaves while an older entry stays: the window
	// moves back to the older one, which the waiter must wait for.
	if err := s.Delete(ctx, es[2]); err != nil {
		t.Fatalf("Delete = %v", err)
	}
	check("predecessor gone", w, 1, []queuekit.Entry{es[1], w}, true, 2)
	if err := s.Delete(ctx, w); err != nil {
		t.Fatalf("Delete = %v", err)
	}
	if snap, err := s.ListBefore(ctx, name, w, 1); err != nil || snap.Own != -1 {
		t.Fatalf("ListBefore of a deleted entry = own %d, %v; want -1", snap.Own, err)
	}
}

// TestNewestBefore checks the window on names in no order, with names that
// are not entries among them.
func TestNewestBefore(t *testing.T) {
	name := func(seq string) string { return "_c_" + newUUID() + "-lock-" + seq }
	kids := []string{name("0000000007"), "locks", name("0000000002"), name("0000000009"), name("0000000004"),
		name("0000000001"), "_c_x-lock-12", name("0000000008"), name("0000000005")}
	for _, tc := range []struct {
		n     int
		want  []uint64
		below int
	}{
		{1, []uint64{7}, 5},
		{3, []uint64{4, 5, 7}, 5},
		{5, []uint64{1, 2, 4, 5, 7}, 5},
		{100, []uint64{1, 2, 4, 5, 7}, 5},
	} {
		top, below := newestBefore(kids, 8, tc.n)
		var got []uint64
		for _, e := range top {
			got = append(got, e.seq)
		}
		if below != tc.below || len(got) != len(tc.want) {
			t.Fatalf("newestBefore(n=%d) = %v, %d below; want %v, %d", tc.n, got, below, tc.want, tc.below)
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Fatalf("newestBefore(n=%d) = %v; want %v", tc.n, got, tc.want)
			}
		}
	}
}
