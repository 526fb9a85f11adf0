package zklock

import (
	"cmp"
	"context"
	"slices"
	"strings"

	"github.com/baton-go/baton/engine/queuekit"
)

var _ queuekit.PredecessorLister = (*session)(nil)

// ListBefore reads dir with the same one getChildren as List (ZooKeeper
// cannot read less), but returns only own and the n newest entries before
// it (queuekit.PredecessorLister). Scanning a name allocates nothing; keys
// are built for the returned entries alone. A waiter woken at the head of a
// queue of thousands thus builds one key, not thousands, and sorts
// nothing: in a 2 000-entry directory List spent more time on keys and
// sorting than go-zookeeper spent decoding the answer.
//
// A reader returns every entry before it: its rule looks back past other
// readers to the nearest writer, and a second, wider window would cost a
// second read of the same directory. Partial is set, with Ahead counting
// the entries before own, when older entries were left out.
func (s *session) ListBefore(ctx context.Context, dir string, own queuekit.Entry, n int) (queuekit.Snapshot, error) {
	parent, r, err := s.readDir(ctx, dir, own)
	if err != nil || r.kids == nil {
		return queuekit.Snapshot{Own: -1}, err
	}
	ownName, ok := strings.CutPrefix(own.Key, parent)
	if !ok || !strings.HasPrefix(ownName, "/") || !slices.Contains(r.kids, ownName[1:]) {
		return queuekit.Snapshot{Own: -1}, nil
	}
	if own.Kind == queuekit.KindRead {
		n = len(r.kids)
	}
	top, ahead := newestBefore(r.kids, own.Seq, max(n, 1))
	snap := queuekit.Snapshot{Own: len(top), Entries: make([]queuekit.Entry, 0, len(top)+1), Partial: ahead > len(top),
		Alone: len(r.kids) == ahead+1}
	for _, p := range top {
		snap.Entries = append(snap.Entries, queuekit.Entry{Key: parent + "/" + p.name, Kind: p.kind, Seq: p.seq})
	}
	snap.Entries = append(snap.Entries, own)
	if snap.Partial {
		snap.Ahead = ahead
	}
	if snap.Token, err = s.token(parent, r.st); err != nil {
		return queuekit.Snapshot{}, err
	}
	return snap, nil
}

// named is a parsed child name.
type named struct {
	name string
	kind queuekit.Kind
	seq  uint64
}

// newestBefore returns the n entries among kids with the largest sequences
// below seq, sorted by sequence, and how many entries are below seq in
// all. getChildren returns children in no order: a small window is kept
// sorted as the scan goes, so only the window is ever allocated or moved;
// a window as large as the directory is sorted once at the end.
func newestBefore(kids []string, seq uint64, n int) (top []named, below int) {
	all := n >= len(kids)
	// The reader's own entry is among kids and not below seq: an
	// uncontended read, kids holding it alone, allocates no window.
	top = make([]named, 0, min(n, max(len(kids)-1, 0)))
	for _, k := range kids {
		kind, sq, ok := parseName(k)
		if !ok || sq >= seq {
			continue
		}
		below++
		e := named{k, kind, sq}
		switch {
		case all:
			top = append(top, e)
		case len(top) < n:
			at, _ := slices.BinarySearchFunc(top, sq, bySeq)
			top = slices.Insert(top, at, e)
		case sq > top[0].seq: // drop the oldest to make room
			at, _ := slices.BinarySearchFunc(top, sq, bySeq)
			copy(top, top[1:at])
			top[at-1] = e
		}
	}
	if all {
		slices.SortFunc(top, func(a, b named) int { return cmp.Compare(a.seq, b.seq) })
	}
	return top, below
}

func bySeq(e named, seq uint64) int { return cmp.Compare(e.seq, seq) }
