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
	clientv3 "go.etcd.io/etcd/client/v3"
)

func inspectQueue(t *testing.T, c *etcdlock.Client, name string) []queuekit.EntryInfo {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	q, err := c.Inspect(ctx, name)
	if err != nil {
		t.Fatalf("Inspect(%q) = %v", name, err)
	}
	return q
}

// TestInspectQueue: a holder and a waiter with exact tokens (create
// revisions), their leases, holder flags; a third contender's key on a
// lease of its own is a waiting entry that Remove deletes exactly.
func TestInspectQueue(t *testing.T) {
	c, w := newClient(t, etcdlock.Options{}), newClient(t, etcdlock.Options{})
	name := uniq(t)
	l := lock(t, mutex(t, c, name), name)
	ctx, cancel := context.WithCancel(context.Background())
	waited := make(chan error, 1)
	go func() {
		_, err := mutex(t, w, name).Lock(ctx)
		waited <- err
	}()
	defer func() {
		cancel()
		<-waited
	}()
	if !eventually(5*time.Second, func() bool { return len(entries(t, c, name)) == 2 }) {
		t.Fatalf("Entries(%q) = %v, want the waiter queued", name, entries(t, c, name))
	}
	raw := rawClient(t, "")
	lease, err := raw.Grant(context.Background(), 30)
	if err != nil {
		t.Fatalf("Grant = %v", err)
	}
	defer raw.Revoke(context.Background(), lease.ID)
	put, err := raw.Put(context.Background(), name+"/abc", "", clientv3.WithLease(lease.ID))
	if err != nil {
		t.Fatalf("Put(%s/abc) = %v", name, err)
	}

	q := inspectQueue(t, c, name)
	if len(q) != 3 {
		t.Fatalf("Inspect(%q) = %+v, want 3 entries", name, q)
	}
	wantHex := strconv.FormatInt(int64(leaseOf(t, keyOf(l))), 16)
	if e := q[0]; !e.Holder || e.Token != l.Token() || e.Session != wantHex || e.Entry != wantHex+"@"+strconv.FormatUint(l.Token(), 10) ||
		e.DeadSession || e.Age != 0 || !strings.Contains(e.Note, "lease TTL") {
		t.Errorf("Inspect(%q)[0] = %+v, want the holder %s@%d with its lease TTL and unknown age", name, e, wantHex, l.Token())
	}
	if e := q[1]; e.Holder || e.Position != 1 || e.Token <= l.Token() || e.DeadSession || e.Kind != queuekit.KindMutex {
		t.Errorf("Inspect(%q)[1] = %+v, want a live waiting mutex entry after the holder", name, e)
	}
	if e := q[2]; e.DeadSession || e.Foreign || e.Holder || e.Position != 2 || e.Session != strconv.FormatInt(int64(lease.ID), 16) ||
		e.Entry != "abc@"+strconv.FormatInt(put.Header.Revision, 10) {
		t.Errorf("Inspect(%q)[2] = %+v, want the leased key abc@%d waiting at 2", name, e, put.Header.Revision)
	}

	// Remove is exact: a stale revision deletes nothing, the right one
	// deletes the key, a second time is success.
	rctx, rcancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer rcancel()
	stale := "abc@" + strconv.FormatInt(put.Header.Revision-1, 10)
	if err := c.Remove(rctx, name, stale); err != nil {
		t.Errorf("Remove(%q, %q) = %v, want nil", name, stale, err)
	}
	if got := len(entries(t, c, name)); got != 3 {
		t.Errorf("after Remove of a stale revision Entries = %d, want 3 (nothing removed)", got)
	}
	for range 2 {
		if err := c.Remove(rctx, name, q[2].Entry); err != nil {
			t.Errorf("Remove(%q, %q) = %v, want nil", name, q[2].Entry, err)
		}
	}
	if got := len(entries(t, c, name)); got != 2 {
		t.Errorf("after Remove Entries = %d, want 2", got)
	}
	release(t, l)
}

// TestRemoveRefuses: Remove takes only entries as Inspect names them.
func TestRemoveRefuses(t *testing.T) {
	c := newClient(t, etcdlock.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, bad := range []string{"", "abc", "@5", "abc@0", "abc@x", "x/abc@5", "../abc@5", "leases/@5", "leases/a/b@5", "zz@5"} {
		if err := c.Remove(ctx, uniq(t), bad); !errors.Is(err, baton.ErrInvalidOption) {
			t.Errorf("Remove(%q) = %v, want ErrInvalidOption", bad, err)
		}
	}
}
