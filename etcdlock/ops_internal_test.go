package etcdlock

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/baton-go/baton/engine/queuekit"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
)

// TestDirOps: a session builds a directory's requests once, rebuilds the
// put (as a new dirOps, leaving the one in use alone) when the value
// changes, keeps at most maxDirOps directories, and guards the delete of
// its own entry by the entry's create revision.
func TestDirOps(t *testing.T) {
	s := newSession(&Client{}, 0x1234abcd, time.Minute, time.Now())
	o := s.ops("jobs/a", "rec")
	if o.key != "jobs/a/1234abcd" || string(o.create[0].KeyBytes()) != o.key || string(o.create[0].ValueBytes()) != "rec" {
		t.Fatalf("ops: key %q, put %q = %q", o.key, o.create[0].KeyBytes(), o.create[0].ValueBytes())
	}
	if again := s.ops("jobs/a", "rec"); again != o {
		t.Error("ops of the same directory and value built anew")
	}
	w := s.ops("jobs/a", "__WRIT__ rec")
	if w == o || string(w.create[0].ValueBytes()) != "__WRIT__ rec" || string(o.create[0].ValueBytes()) != "rec" {
		t.Errorf("new value: put %q (old %q), want a new dirOps putting the new value beside the old one", w.create[0].ValueBytes(), o.create[0].ValueBytes())
	}

	cmps, del := s.exact(queuekit.Entry{Key: o.key, Seq: 42})
	if len(cmps) != 1 || len(del) != 1 || string(del[0].KeyBytes()) != o.key || string(cmps[0].Key) != o.key ||
		cmps[0].Target != pb.Compare_CREATE || cmps[0].Result != pb.Compare_EQUAL ||
		cmps[0].TargetUnion.(*pb.Compare_CreateRevision).CreateRevision != 42 {
		t.Errorf("exact(own entry) = %v, %v; want create revision 42, delete of %s", cmps, del, o.key)
	}
	if cmps, _ := s.exact(queuekit.Entry{Key: o.key}); cmps[0].Target != pb.Compare_LEASE {
		t.Errorf("exact(own entry, revision unknown) guards by %v, want the lease", cmps[0].Target)
	}
	if cmps, del := s.exact(queuekit.Entry{Key: "jobs/b/1234abcd", Seq: 7}); string(del[0].KeyBytes()) != "jobs/b/1234abcd" ||
		cmps[0].TargetUnion.(*pb.Compare_CreateRevision).CreateRevision != 7 {
		t.Errorf("exact(entry without dirOps) = %v, %v", cmps, del)
	}

	for i := range 3 * maxDirOps {
		s.ops("jobs/"+strconv.Itoa(i), "rec")
		if len(s.dirs) > maxDirOps {
			t.Fatalf("after %d directories: %d kept, want ≤ %d", i+1, len(s.dirs), maxDirOps)
		}
	}
}

// TestBound: a request's context ends with the session, whatever the
// caller's: a context that never ends is replaced by the session's own,
// another is merged with it; a merged one released early leaves the
// session's alone.
func TestBound(t *testing.T) {
	s := newSession(&Client{}, 0x1234abcd, time.Minute, time.Now())
	bg, bgCancel := s.bound(context.Background())
	caller, callerCancel := context.WithCancel(context.Background())
	defer callerCancel()
	merged, mergedCancel := s.bound(caller)
	early, earlyCancel := s.bound(caller)
	earlyCancel()
	if early.Err() == nil || s.life.Err() != nil || bg.Err() != nil || merged.Err() != nil {
		t.Fatalf("after one cancel: early %v, session %v, background %v, merged %v", early.Err(), s.life.Err(), bg.Err(), merged.Err())
	}
	s.end(errSessionClosed)
	for name, ctx := range map[string]context.Context{"background": bg, "merged": merged} {
		select {
		case <-ctx.Done():
		case <-time.After(5 * time.Second):
			t.Errorf("%s: not done 5s after the session ended", name)
		}
	}
	bgCancel()
	mergedCancel()
	if caller.Err() != nil {
		t.Error("the caller's context ended with the session")
	}
}
