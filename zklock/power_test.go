package zklock_test

import (
	"slices"
	"testing"

	"github.com/baton-go/baton/engine"
	"github.com/baton-go/baton/zklock"
)

// TestNamesAndPurge: the Conn lists the locks directly under a prefix,
// not their entries nor what lies deeper, and Purge removes their
// directories, after which a lock's token still rises.
func TestNamesAndPurge(t *testing.T) {
	bc := dial(t, "", zklock.Options{}).Baton()
	prefix := lockName(t)
	ctx := t.Context()
	var last uint64
	for _, n := range []string{prefix + "/b", prefix + "/a", prefix + "/a/deeper"} {
		m, err := bc.Mutex(n)
		if err != nil {
			t.Fatal(err)
		}
		l, err := m.TryLock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		last = max(last, l.Token())
		if n == prefix+"/a" {
			defer l.Release(ctx) // an entry under prefix/a while it lists
			continue
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	ls, ok := engine.Power[engine.Lister](bc)
	if !ok || !engine.Lists("zk") {
		t.Fatal("zk's Conn is no engine.Lister, or its driver does not say so")
	}
	names, err := ls.Names(ctx, prefix)
	if want := []string{prefix + "/a", prefix + "/b"}; err != nil || !slices.Equal(names, want) {
		t.Fatalf("Names = %q, %v; want %q", names, err, want)
	}
	pg, ok := engine.Power[engine.Purger](bc)
	if !ok {
		t.Fatal("zk's Conn is no engine.Purger")
	}
	if err := pg.Purge(ctx, prefix+"/b"); err != nil {
		t.Fatal(err)
	}
	if names, err := ls.Names(ctx, prefix); err != nil || !slices.Equal(names, []string{prefix + "/a"}) {
		t.Fatalf("Names after Purge(b) = %q, %v; want only a", names, err)
	}
	m, _ := bc.Mutex(prefix + "/b")
	l, err := m.TryLock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)
	if l.Token() <= last {
		t.Errorf("token after Purge %d, want > %d: a purged lock's tokens must keep rising", l.Token(), last)
	}
}
