package zklock_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/engine/queuekit"
	"github.com/baton-go/baton/zklock"
)

func inspectQueue(t *testing.T, c *zklock.Client, name string) []queuekit.EntryInfo {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	q, err := c.Inspect(ctx, name)
	if err != nil {
		t.Fatalf("Inspect(%q) = %v", name, err)
	}
	return q
}

// TestInspectQueue: a holder and a waiter of a mutex, with their kinds,
// sessions, ages and holder flags; liveness is known (the test server
// whitelists the four-letter words) and nothing is flagged.
func TestInspectQueue(t *testing.T) {
	c := dial(t, "", zklock.Options{})
	w := dial(t, "", zklock.Options{})
	name := lockName(t)
	l := lock(t, mutex(t, c, name))
	ctx, cancel := context.WithCancel(t.Context())
	waited := make(chan error, 1)
	go func() {
		_, err := mutex(t, w, name).Lock(ctx)
		waited <- err
	}()
	defer func() {
		cancel()
		<-waited
	}()
	eventually(t, 5*time.Second, "the waiter queued", func() bool { return len(entries(t, c, name)) == 2 })

	q := inspectQueue(t, c, name)
	if len(q) != 2 {
		t.Fatalf("Inspect(%q) = %+v, want 2 entries", name, q)
	}
	sessions := []int64{c.SessionID(), w.SessionID()}
	for i, e := range q {
		if e.Position != i || e.Kind != queuekit.KindMutex || e.Holder != (i == 0) || e.Token != 0 ||
			e.Age <= 0 || e.Duplicate || e.DeadSession || e.Session != fmt.Sprintf("0x%x", sessions[i]) {
			t.Errorf("Inspect(%q)[%d] = %+v, want position %d, a mutex entry of session 0x%x, holder=%v, token unknown, an age, no flags",
				name, i, e, i, sessions[i], i == 0)
		}
		if strings.Contains(e.Note, "unknown") {
			t.Errorf("Inspect(%q)[%d].Note = %q, want liveness known (4lw dump)", name, i, e.Note)
		}
		if !strings.HasPrefix(e.Entry, "_c_") || strings.Contains(e.Entry, "/") {
			t.Errorf("Inspect(%q)[%d].Entry = %q, want a child name", name, i, e.Entry)
		}
	}
	release(t, l)
}

// TestInspectSemaphore: leases show as holders among the first N (N is
// stored with baton's leases), under "leases/".
func TestInspectSemaphore(t *testing.T) {
	c := dial(t, "", zklock.Options{})
	name := lockName(t)
	s, err := c.Semaphore(name, 3)
	if err != nil {
		t.Fatalf("Semaphore(%q, 3) = %v", name, err)
	}
	for range 2 {
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		l, err := s.Acquire(ctx)
		cancel()
		if err != nil {
			t.Fatalf("Acquire(%q) = %v", name, err)
		}
		defer release(t, l)
	}
	q := inspectQueue(t, c, name)
	leases := 0
	for _, e := range q {
		if e.Kind != queuekit.KindLease {
			continue
		}
		leases++
		if !e.Holder || !strings.HasPrefix(e.Entry, "leases/") {
			t.Errorf("Inspect(%q) lease = %+v, want a holder under leases/", name, e)
		}
	}
	if leases != 2 {
		t.Errorf("Inspect(%q) = %+v, want 2 leases", name, q)
	}
}

// TestRemoveOnlyEntries: Remove refuses the directory, sub-directories and
// paths outside the lock; an entry already gone is success.
func TestRemoveOnlyEntries(t *testing.T) {
	c := dial(t, "", zklock.Options{})
	name := lockName(t)
	l := lock(t, mutex(t, c, name))
	defer release(t, l)
	entry := inspectQueue(t, c, name)[0].Entry
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	for _, bad := range []string{"", ".", "..", "leases", "locks/", "../" + entry, "x/" + entry, entry + "/x", "zookeeper"} {
		if err := c.Remove(ctx, name, bad); !errors.Is(err, baton.ErrInvalidOption) {
			t.Errorf("Remove(%q, %q) = %v, want ErrInvalidOption", name, bad, err)
		}
	}
	if got := entries(t, c, name); len(got) != 1 {
		t.Errorf("Entries(%q) after refused removals = %v, want the holder's entry", name, got)
	}
	gone := strings.Replace(entry, "-lock-", "-lock-9", 1)[:len(entry)]
	if err := c.Remove(ctx, name, gone); err != nil {
		t.Errorf("Remove(%q, %q) of a missing entry = %v, want nil", name, gone, err)
	}
}

// TestTokenBound: the bound is at least the holder's token, and a grant
// after a forced removal gets a larger token: raising the fence to the
// bound rejects the old holder and admits the next.
func TestTokenBound(t *testing.T) {
	c := dial(t, "", zklock.Options{})
	other := dial(t, "", zklock.Options{})
	name := lockName(t)
	l := lock(t, mutex(t, c, name))
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	bound, err := c.TokenBound(ctx, name)
	if err != nil {
		t.Fatalf("TokenBound(%q) = %v", name, err)
	}
	if bound < l.Token() {
		t.Errorf("TokenBound(%q) = %d, want at least the holder's token %d", name, bound, l.Token())
	}
	if err := c.Remove(ctx, name, inspectQueue(t, c, name)[0].Entry); err != nil {
		t.Fatalf("Remove(%q, holder) = %v", name, err)
	}
	next := lock(t, mutex(t, other, name))
	if next.Token() <= bound {
		t.Errorf("token after the forced removal = %d, want above the bound %d", next.Token(), bound)
	}
	release(t, next)
	_ = l.Release(ctx) // its entry is gone already: nothing to delete
}

// TestInspectDataWithoutRecord: entries whose data is not baton's holder
// record show no Process — a Curator lease (its client's address), a
// lease of a baton built before the record (its N alone, which still
// counts), a Curator latch whose ID looks like a record (a candidate's
// data is its ID alone) — while a baton lease beside them shows its own.
func TestInspectDataWithoutRecord(t *testing.T) {
	c := dial(t, "", zklock.Options{Process: baton.Process{Host: "web-1", PID: 42}})
	name := lockName(t)
	dir, _ := c.Dir(name)
	raw := foreign(t)
	mkdirs(t, raw, dir+"/leases")
	curatorCreate(t, raw, dir+"/leases", "lease-", []byte("127.0.0.1"))
	curatorCreate(t, raw, dir+"/leases", "lease-", []byte("baton:permits=3"))
	s, err := c.Semaphore(name, 3)
	if err != nil {
		t.Fatalf("Semaphore(%q, 3) = %v", name, err)
	}
	l, err := try(t, s.Acquire)
	if err != nil {
		t.Fatalf("Acquire = %v", err)
	}
	defer release(t, l)
	latches := lockName(t)
	ldir, _ := c.Dir(latches)
	mkdirs(t, raw, ldir)
	curatorCreate(t, raw, ldir, "latch-", []byte("java-1\nhost=h&pid=1"))

	q := append(inspectQueue(t, c, name), inspectQueue(t, c, latches)...)
	if len(q) != 4 {
		t.Fatalf("Inspect = %+v, want 3 leases and a latch", q)
	}
	for i, e := range q {
		want := baton.Process{}
		if i == 2 {
			want = baton.Process{Host: "web-1", PID: 42}
		}
		if e.Process.Host != want.Host || e.Process.PID != want.PID || (e.Kind == queuekit.KindLease && !e.Holder) {
			t.Errorf("Inspect[%d] = %+v, want process %+v (and a lease among N=3 holding)", i, e, want)
		}
	}
}
