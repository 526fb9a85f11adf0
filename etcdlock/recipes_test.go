package etcdlock_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/engine/queuekit"
	"github.com/baton-go/baton/etcdlock"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
)

// TestRecipeValues: the read/write lock and the semaphore write their keys
// as documented: "<name>/<lease hex>" with the kind's marker, a space and
// the holder record as value, and "<name>/leases/<lease hex>" with
// "lease-baton:permits=<n>", a space and the record.
func TestRecipeValues(t *testing.T) {
	const rec = "host=web-1&pid=42&prog=job"
	c := newClient(t, etcdlock.Options{Process: baton.Process{Host: "web-1", PID: 42, Program: "job"}})
	raw := rawClient(t, "")
	name := uniq(t)
	value := func(key string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		resp, err := raw.Get(ctx, key)
		if err != nil || len(resp.Kvs) != 1 {
			t.Fatalf("Get(%q) = %v, %v; want one key", key, resp, err)
		}
		return string(resp.Kvs[0].Value)
	}

	rw, err := c.RWMutex(name + "/rw")
	if err != nil {
		t.Fatalf("RWMutex = %v", err)
	}
	r := lock(t, rw.RLocker(), "RLock")
	if v := value(keyOf(r)); v != "__READ__ "+rec {
		t.Errorf("reader's value = %q, want __READ__ %s", v, rec)
	}
	release(t, r)
	w := lock(t, rw, "Lock")
	if v := value(keyOf(w)); v != "__WRIT__ "+rec {
		t.Errorf("writer's value = %q, want __WRIT__ %s", v, rec)
	}
	release(t, w)

	s, err := c.Semaphore(name+"/sem", 2)
	if err != nil {
		t.Fatalf("Semaphore = %v", err)
	}
	p := lock(t, s, "Acquire")
	if k := keyOf(p); !strings.HasPrefix(k, name+"/sem/leases/") || leaseOf(t, k) == 0 {
		t.Errorf("lease key %q, want %s/sem/leases/<lease hex>", k, name)
	}
	if v := value(keyOf(p)); v != "lease-baton:permits=2 "+rec {
		t.Errorf("lease value = %q, want lease-baton:permits=2 %s", v, rec)
	}
	if keys := entries(t, c, name+"/sem/locks"); len(keys) != 0 {
		t.Errorf("guard keys after Acquire = %q, want none", keys)
	}
	release(t, p)
}

// TestElectionConcurrencyCompat: baton's election and etcd's
// concurrency.Election (what `etcdctl elect` runs) on the same name see
// one leader between them, in both orders, and each reads the other's
// proposal as the leader's value.
func TestElectionConcurrencyCompat(t *testing.T) {
	c := newClient(t, etcdlock.Options{})
	raw := rawClient(t, "")
	name := uniq(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sess, err := concurrency.NewSession(raw, concurrency.WithTTL(2))
	if err != nil {
		t.Fatalf("concurrency.NewSession = %v", err)
	}
	defer sess.Close()
	theirs := concurrency.NewElection(sess, name)
	ours, err := c.Election(name)
	if err != nil {
		t.Fatalf("Election(%q) = %v", name, err)
	}

	ld, err := ours.CampaignAs(ctx, "baton-1")
	if err != nil {
		t.Fatalf("CampaignAs = %v", err)
	}
	if resp, err := theirs.Leader(ctx); err != nil || string(resp.Kvs[0].Value) != "baton-1" {
		t.Fatalf("concurrency Leader() = %v, %v; want the value baton-1", resp, err)
	}
	campaigned := make(chan error, 1)
	go func() { campaigned <- theirs.Campaign(ctx, "etcdctl-1") }()
	waitKeys(t, c, name, 2)
	select {
	case err := <-campaigned:
		t.Fatalf("concurrency Campaign while baton leads returned %v, want it to wait", err)
	case <-time.After(300 * time.Millisecond):
	}
	if err := ld.Resign(ctx, baton.ResignPlan{}); err != nil {
		t.Fatalf("Resign = %v", err)
	}
	if err := <-campaigned; err != nil {
		t.Fatalf("concurrency Campaign after baton resigned = %v", err)
	}
	if cur, err := ours.Leader(ctx); err != nil || cur.ID != "etcdctl-1" || cur.Entry != theirs.Key() {
		t.Fatalf("Leader() = (%+v, %v), want etcdctl-1 at %s", cur, err, theirs.Key())
	}

	won := make(chan error, 1)
	var ld2 *baton.Leader
	go func() {
		var err error
		ld2, err = ours.CampaignAs(ctx, "baton-2")
		won <- err
	}()
	waitKeys(t, c, name, 2)
	select {
	case err := <-won:
		t.Fatalf("CampaignAs while concurrency leads returned %v, want it to wait", err)
	case <-time.After(300 * time.Millisecond):
	}
	if err := theirs.Resign(ctx); err != nil {
		t.Fatalf("concurrency Resign = %v", err)
	}
	if err := <-won; err != nil {
		t.Fatalf("CampaignAs after concurrency resigned = %v", err)
	}
	if ld2.Epoch() <= uint64(theirs.Rev()) {
		t.Errorf("baton epoch %d, want > the previous leader's create revision %d", ld2.Epoch(), theirs.Rev())
	}
	if err := ld2.Resign(ctx, baton.ResignPlan{}); err != nil {
		t.Fatalf("Resign = %v", err)
	}
}

func waitKeys(t *testing.T, c interface {
	Entries(context.Context, string) ([]string, error)
}, name string, n int) {
	t.Helper()
	if !eventually(5*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		keys, err := c.Entries(ctx, name)
		return err == nil && len(keys) == n
	}) {
		t.Fatalf("Entries(%q) never had %d keys", name, n)
	}
}

// TestUnrecordedReader: a reader's key without a holder record, as baton
// wrote it before the record, still reads as a reader: a new reader
// shares with it, a writer waits, and Inspect shows it with no process.
func TestUnrecordedReader(t *testing.T) {
	c := newClient(t, etcdlock.Options{})
	raw := rawClient(t, "")
	name := uniq(t)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	lease, err := raw.Grant(ctx, 10)
	if err != nil {
		t.Fatalf("Grant = %v", err)
	}
	defer func() { _, _ = raw.Revoke(context.Background(), lease.ID) }()
	key := fmt.Sprintf("%s/%x", name, lease.ID)
	if _, err := raw.Put(ctx, key, "__READ__", clientv3.WithLease(lease.ID)); err != nil {
		t.Fatalf("Put(%q) = %v", key, err)
	}
	rw, err := c.RWMutex(name)
	if err != nil {
		t.Fatalf("RWMutex = %v", err)
	}
	r, err := rw.TryRLock(ctx)
	if err != nil {
		t.Fatalf("TryRLock beside an unrecorded reader = %v, want granted", err)
	}
	defer release(t, r)
	if l, err := rw.TryLock(ctx); !errors.Is(err, baton.ErrNotAcquired) {
		t.Errorf("TryLock beside two readers = %v, %v; want %v", l, err, baton.ErrNotAcquired)
	}
	es, err := c.Inspect(ctx, name)
	if err != nil || len(es) != 2 {
		t.Fatalf("Inspect = %+v, %v; want two readers", es, err)
	}
	if old, ours := es[0], es[1]; !old.Holder || old.Kind != queuekit.KindRead || old.Process.PID != 0 ||
		!ours.Holder || ours.Kind != queuekit.KindRead || ours.Process.PID != os.Getpid() {
		t.Errorf("entries = %+v, want the unrecorded reader, then ours with this pid, both holding", es)
	}
}
