package etcdlock_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/engine/queuekit"
	"github.com/baton-go/baton/etcdlock"
)

// foreignSuffixes are key names under a lock that no recipe writes: signs,
// a prefix, a space, a leading zero, upper case. Each would parse as a
// number with a lax parser.
var foreignSuffixes = []string{"-1", "+5", "0x10", " 7", "07", "ABC"}

// TestForeignKeysNeverBlock puts foreign keys under a mutex and under a
// semaphore's queues before anyone acquires (so they are the oldest keys
// there): they must not block an acquire, and Inspect must report them as
// foreign after the real queue, while Remove refuses them.
func TestForeignKeysNeverBlock(t *testing.T) {
	raw := rawClient(t, "")
	c := newClient(t, etcdlock.Options{})
	name, sem := uniq(t)+"/m", uniq(t)+"/s"
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	put := func(key string) {
		t.Helper()
		if _, err := raw.Put(ctx, key, ""); err != nil {
			t.Fatalf("Put(%q) = %v", key, err)
		}
		t.Cleanup(func() { _, _ = raw.Delete(context.Background(), key) })
	}
	for _, s := range foreignSuffixes {
		put(name + "/" + s)
		put(sem + "/locks/" + s)
		put(sem + "/leases/" + s)
	}

	l, p := takeBehind(t, ctx, c, name, sem, "foreign keys")
	defer release(t, l)
	defer release(t, p)

	q := inspectQueue(t, c, name)
	if len(q) != 1+len(foreignSuffixes) {
		t.Fatalf("Inspect(%q) = %+v, want the holder and %d foreign keys", name, q, len(foreignSuffixes))
	}
	if e := q[0]; !e.Holder || e.Foreign || e.Position != 0 || e.Token != l.Token() {
		t.Errorf("Inspect(%q)[0] = %+v, want the holder at position 0 with token %d", name, e, l.Token())
	}
	for i, e := range q[1:] {
		want := foreignSuffixes[i] + "@"
		if !e.Foreign || e.Holder || e.Position != -1 || e.DeadSession || e.Token != 0 ||
			!strings.HasPrefix(e.Entry, want) || !strings.Contains(e.Note, "foreign") {
			t.Errorf("Inspect(%q)[%d] = %+v, want foreign key %s… at position -1", name, i+1, e, want)
		}
		if err := c.Remove(ctx, name, e.Entry); !errors.Is(err, baton.ErrInvalidOption) {
			t.Errorf("Remove(%q, %q) = %v, want %v", name, e.Entry, err, baton.ErrInvalidOption)
		}
	}
	if got := len(entries(t, c, name)); got != 1+len(foreignSuffixes) {
		t.Errorf("Entries(%q) after the refused removes = %d keys, want %d", name, got, 1+len(foreignSuffixes))
	}

	sq := inspectQueue(t, c, sem)
	var holders, foreign int
	for _, e := range sq {
		switch {
		case e.Foreign:
			foreign++
			if e.Position != -1 || !(strings.HasPrefix(e.Entry, "locks/") || strings.HasPrefix(e.Entry, "leases/")) {
				t.Errorf("Inspect(%q): foreign %+v, want position -1 under locks/ or leases/", sem, e)
			}
		case e.Holder:
			holders++
			if e.Kind != queuekit.KindLease || e.Token != p.Token() {
				t.Errorf("Inspect(%q): holder %+v, want the lease with token %d", sem, e, p.Token())
			}
		}
	}
	if holders != 1 || foreign != 2*len(foreignSuffixes) {
		t.Errorf("Inspect(%q) = %+v, want 1 holder and %d foreign keys", sem, sq, 2*len(foreignSuffixes))
	}
}

// TestLeaselessKeyIsForeign puts keys named like entries ("1234abcd", a
// lease ID's form) without a lease under a mutex and a semaphore's leases,
// as `etcdctl put appcfg/feature/1234abcd` does beside a lock named
// "appcfg/feature". No contender writes a key without its lease: the keys
// must not block an acquire, Inspect must flag them foreign (not dead, so
// clean leaves them) and say why, and Remove must refuse to delete them.
func TestLeaselessKeyIsForeign(t *testing.T) {
	raw := rawClient(t, "")
	c := newClient(t, etcdlock.Options{})
	name, sem := uniq(t)+"/m", uniq(t)+"/s"
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	put := func(key string) int64 {
		t.Helper()
		resp, err := raw.Put(ctx, key, "user-data")
		if err != nil {
			t.Fatalf("Put(%q) = %v", key, err)
		}
		t.Cleanup(func() { _, _ = raw.Delete(context.Background(), key) })
		return resp.Header.Revision
	}
	rev := put(name + "/1234abcd")
	put(sem + "/leases/1234abcd")

	l, p := takeBehind(t, ctx, c, name, sem, "a key without a lease")
	defer release(t, l)
	defer release(t, p)

	q := inspectQueue(t, c, name)
	want := "1234abcd@" + strconv.FormatInt(rev, 10)
	if len(q) != 2 || !q[0].Holder || q[0].Token != l.Token() {
		t.Fatalf("Inspect(%q) = %+v, want the holder then the foreign key", name, q)
	}
	if e := q[1]; !e.Foreign || e.DeadSession || e.Holder || e.Position != -1 || e.Session != "" ||
		e.Entry != want || !strings.Contains(e.Note, "no lease") || !strings.Contains(e.Note, "etcdctl lock") {
		t.Errorf("Inspect(%q)[1] = %+v, want %s foreign at -1, not dead, its note naming the missing lease", name, e, want)
	}
	if err := c.Remove(ctx, name, want); !errors.Is(err, baton.ErrInvalidOption) {
		t.Errorf("Remove(%q, %q) = %v, want %v", name, want, err, baton.ErrInvalidOption)
	}
	if got, err := raw.Get(ctx, name+"/1234abcd"); err != nil || len(got.Kvs) != 1 || string(got.Kvs[0].Value) != "user-data" {
		t.Errorf("after the refused Remove Get(%s/1234abcd) = %v, %v; want the user's key intact", name, got, err)
	}
	sq, found := inspectQueue(t, c, sem), 0
	for _, e := range sq {
		if strings.HasPrefix(e.Entry, "leases/1234abcd@") {
			found++
			if !e.Foreign || e.DeadSession || e.Position != -1 {
				t.Errorf("Inspect(%q): %+v, want the key without a lease foreign at -1, not dead", sem, e)
			}
		}
	}
	if found != 1 {
		t.Errorf("Inspect(%q) = %+v, want leases/1234abcd listed once", sem, sq)
	}
}

// takeBehind takes the mutex name and a permit of the semaphore sem of 1,
// each with TryLock/TryAcquire: what lies under them (behind: keys no
// baton client wrote) must not keep them from being granted.
func takeBehind(t *testing.T, ctx context.Context, c *etcdlock.Client, name, sem, behind string) (l, p *baton.Lease) {
	t.Helper()
	actx, acancel := context.WithTimeout(ctx, 3*time.Second)
	defer acancel()
	l, err := mutex(t, c, name).TryLock(actx)
	if err != nil {
		t.Fatalf("TryLock(%q) behind %s = %v, want a grant", name, behind, err)
	}
	s, err := c.Semaphore(sem, 1)
	if err != nil {
		t.Fatalf("Semaphore(%q, 1) = %v", sem, err)
	}
	if p, err = s.TryAcquire(actx); err != nil {
		t.Fatalf("TryAcquire(%q) behind %s = %v, want a grant", sem, behind, err)
	}
	return l, p
}
