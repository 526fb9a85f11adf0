package zklock_test

import (
	"context"
	"errors"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/batontest/testenv"
	"github.com/baton-go/baton/batontest/zkframes"
	"github.com/baton-go/baton/engine/queuekit"
	"github.com/baton-go/baton/internal/leasetest"
	"github.com/baton-go/baton/zklock"
	"github.com/go-zookeeper/zk"
)

const opGetData = 4

// lockAsync starts m.Lock on its own goroutine; the lease (nil on error)
// arrives on the returned channel.
func lockAsync(t *testing.T, ctx context.Context, m *queuekit.Mutex, who string) <-chan *baton.Lease {
	got := make(chan *baton.Lease, 1)
	go func() { // owner: the test; ends when the Lock returns
		l, err := m.Lock(ctx)
		if err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("%s's Lock = %v", who, err)
		}
		got <- l
	}()
	return got
}

// TestWokenAfterFirstReadsNoQueue: when the holder a waiter queued behind
// releases, the waiter reads the directory's data, not its children, and
// gets a token past the holder's. A queue of a few hundred behind it would
// otherwise be decoded on every handoff. The holder must have had someone
// behind it when it was granted (b, with c queued, after a alone).
func TestWokenAfterFirstReadsNoQueue(t *testing.T) {
	f := zkframes.Start(t, testenv.ZK(t))
	a := dial(t, "", zklock.Options{})
	b := dial(t, "", zklock.Options{})
	c := dial(t, f.Addr, zklock.Options{})
	name := lockName(t)
	la := lock(t, mutex(t, a, name))
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	gotB := lockAsync(t, ctx, mutex(t, b, name), "b")
	eventually(t, 5*time.Second, "b waits for a", func() bool { return b.Watches() == 1 })
	gotC := lockAsync(t, ctx, mutex(t, c, name), "c")
	eventually(t, 5*time.Second, "c waits for b", func() bool { return c.Watches() == 1 })
	dir, err := a.Dir(name)
	if err != nil {
		t.Fatal(err)
	}
	conn := foreign(t)
	for range 300 {
		if _, err := conn.Create(dir+"/_c_"+zklock.NewUUID()+"-lock-", nil, zk.FlagEphemeralSequential, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatalf("Create = %v", err)
		}
	}
	release(t, la)
	lb := <-gotB
	if lb == nil {
		return
	}

	f.Take()
	release(t, lb)
	lc := <-gotC
	ops := f.Take()
	if lc == nil {
		return
	}
	defer release(t, lc)
	if ops[opGetChildren2] != 0 || ops[opGetData] != 1 {
		t.Errorf("the woken waiter sent %v; want one getData (%d) and no getChildren (%d)", ops, opGetData, opGetChildren2)
	}
	if lc.Token() <= lb.Token() || lb.Token() <= la.Token() {
		t.Errorf("tokens a %d, b %d, c %d; want increasing", la.Token(), lb.Token(), lc.Token())
	}
	d, _, err := conn.Get(dir)
	if err != nil {
		t.Fatal(err)
	}
	if want := "baton:released=" + path.Base(lb.Owner()); string(d) != want {
		t.Errorf("the directory's data is %q, want %q", d, want)
	}
}

// TestWokenBehindLeaverStillWaits: a waiter whose predecessor gave up (it
// was never granted, so the holder before it is still there) must read the
// queue and go on waiting, not take the lock; and it takes it once the
// holder releases.
func TestWokenBehindLeaverStillWaits(t *testing.T) {
	a := dial(t, "", zklock.Options{})
	w := dial(t, "", zklock.Options{})
	b := dial(t, "", zklock.Options{})
	name := lockName(t)
	la := lock(t, mutex(t, a, name))
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	wctx, wcancel := context.WithCancel(ctx)
	wgot := lockAsync(t, wctx, mutex(t, w, name), "w")
	eventually(t, 5*time.Second, "w waits for a", func() bool { return w.Watches() == 1 })
	got := lockAsync(t, ctx, mutex(t, b, name), "b")
	eventually(t, 5*time.Second, "b waits for w", func() bool { return b.Watches() == 1 })

	// A mark left by an earlier first holder's release, not w's.
	dir, err := a.Dir(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := foreign(t).Set(dir, []byte("baton:released=_c_"+zklock.NewUUID()+"-lock-0000000000"), -1); err != nil {
		t.Fatal(err)
	}
	wcancel()
	if l := <-wgot; l != nil {
		t.Fatalf("w got the lock held by a")
	}
	eventually(t, 5*time.Second, "w's entry is gone", func() bool { return len(entries(t, a, name)) == 2 })
	leasetest.WaitsThenTakes(t, got, la, 500*time.Millisecond, func(l *baton.Lease) { release(t, l) })
}

// TestReleaseFirstWithoutWriteOnDir: a directory another client created
// without the write permission still has its lock released and handed on:
// the mark on the directory is skipped, the entry deleted.
func TestReleaseFirstWithoutWriteOnDir(t *testing.T) {
	c := dial(t, "", zklock.Options{})
	d := dial(t, "", zklock.Options{})
	e := dial(t, "", zklock.Options{})
	name := lockName(t)
	dir, err := c.Dir(name)
	if err != nil {
		t.Fatal(err)
	}
	conn := foreign(t)
	acl := zk.WorldACL(zk.PermRead | zk.PermCreate | zk.PermDelete)
	for p := ""; ; {
		rest, _ := strings.CutPrefix(dir, p+"/")
		head, _, _ := strings.Cut(rest, "/")
		p += "/" + head
		if _, err := conn.Create(p, nil, 0, acl); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			t.Fatalf("Create(%s) = %v", p, err)
		}
		if p == dir {
			break
		}
	}
	t.Cleanup(func() { conn.Delete(dir, -1) })
	lc := lock(t, mutex(t, c, name))
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	gotD := lockAsync(t, ctx, mutex(t, d, name), "d")
	eventually(t, 5*time.Second, "d waits for c", func() bool { return d.Watches() == 1 })
	gotE := lockAsync(t, ctx, mutex(t, e, name), "e")
	eventually(t, 5*time.Second, "e waits for d", func() bool { return e.Watches() == 1 })
	release(t, lc)
	ld := <-gotD
	if ld == nil {
		return
	}
	release(t, ld) // granted with e behind: the release tries the mark
	le := <-gotE
	if le == nil {
		return
	}
	release(t, le)
	if es := entries(t, c, name); len(es) != 0 {
		t.Errorf("entries after the releases: %v, want none", es)
	}
}

// TestAloneReleaseIsADelete: a grant with nobody behind it is released
// with a plain delete on every recipe, not the multi that marks the
// directory: the uncontended lock costs what Curator's does.
func TestAloneReleaseIsADelete(t *testing.T) {
	f := zkframes.Start(t, testenv.ZK(t))
	c := dial(t, f.Addr, zklock.Options{})
	name := lockName(t)
	rw, err := c.RWMutex(name + "/rw")
	if err != nil {
		t.Fatal(err)
	}
	sem, err := c.Semaphore(name+"/sem", 2)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []struct {
		what    string
		acquire func(context.Context) (*baton.Lease, error)
	}{
		{"mutex", mutex(t, c, name+"/m").Lock},
		{"read lock", rw.RLock},
		{"write lock", rw.Lock},
		{"semaphore", sem.Acquire},
	} {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		l, err := r.acquire(ctx)
		cancel()
		if err != nil {
			t.Fatalf("%s: acquire = %v", r.what, err)
		}
		f.Take()
		release(t, l)
		if ops := f.Take(); ops[opMulti] != 0 || ops[opDelete] != 1 {
			t.Errorf("%s: the release sent %v; want one delete (%d) and no multi (%d)", r.what, ops, opDelete, opMulti)
		}
	}
}
