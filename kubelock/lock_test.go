package kubelock_test

import (
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/kubelock"
)

// TestLockUnlock takes and frees a mutex between two clients: the holder
// is spec.holderIdentity (kubectl's HOLDER column), the other is refused
// while it holds and granted with a larger token after it released, and
// the release leaves the Lease as client-go's release does.
func TestLockUnlock(t *testing.T) {
	t.Parallel()
	c1, c2 := newClient(t, kubelock.Options{}), newClient(t, kubelock.Options{})
	name := lockName(t)
	m1, err := c1.Mutex(name)
	if err != nil {
		t.Fatal(err)
	}
	m2, _ := c2.Mutex(name)
	l1, err := m1.Lock(opCtx(t, 10*time.Second))
	if err != nil {
		t.Fatalf("Lock = %v", err)
	}
	lease := getLease(t, c1, name)
	if got := holderOf(lease); got != l1.Owner() {
		t.Errorf("holderIdentity = %q, want the grant's owner %q", got, l1.Owner())
	}
	if d := lease.Spec.LeaseDurationSeconds; d == nil || *d != 3 {
		t.Errorf("leaseDurationSeconds = %v, want 3 (1.5s rounded up, and a second for client-go's whole-second times)", d)
	}
	if l, err := m2.TryLock(opCtx(t, 5*time.Second)); !errors.Is(err, baton.ErrNotAcquired) {
		t.Errorf("TryLock while held = %v, %v, want ErrNotAcquired", l, err)
	}
	if err := l1.Release(opCtx(t, 5*time.Second)); err != nil {
		t.Fatalf("Release = %v", err)
	}
	lease = getLease(t, c1, name)
	if got, d := holderOf(lease), lease.Spec.LeaseDurationSeconds; got != "" || d == nil || *d != 1 {
		t.Errorf("after release: holderIdentity %q, leaseDurationSeconds %v, want \"\" and 1 (client-go's release)", got, d)
	}
	l2, err := m2.TryLock(opCtx(t, 5*time.Second))
	if err != nil {
		t.Fatalf("TryLock after release = %v", err)
	}
	if l2.Token() <= l1.Token() {
		t.Errorf("token after handoff %d, want > %d", l2.Token(), l1.Token())
	}
	lease = getLease(t, c1, name)
	if tr := lease.Spec.LeaseTransitions; tr == nil || *tr != 2 {
		t.Errorf("leaseTransitions after two grants = %v, want 2", tr)
	}
	if got := lease.Annotations["baton.dev/token"]; got != strconv.FormatUint(l2.Token(), 10) {
		t.Errorf("baton.dev/token = %q, want the last grant's token %d", got, l2.Token())
	}
	if err := l2.Release(opCtx(t, 5*time.Second)); err != nil {
		t.Fatalf("Release = %v", err)
	}
}

// TestTokensIncreaseAcrossRecipes grants a name in turn to a mutex, a
// reader, a writer, permits and a leader of several clients: every
// grant's token exceeds every earlier one's, since all of them take the
// counter on the name's one Lease.
func TestTokensIncreaseAcrossRecipes(t *testing.T) {
	t.Parallel()
	cs := []*kubelock.Client{newClient(t, kubelock.Options{}), newClient(t, kubelock.Options{}), newClient(t, kubelock.Options{})}
	name := lockName(t)
	var last uint64
	check := func(what string, l *baton.Lease, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s = %v", what, err)
		}
		if l.Token() <= last {
			t.Errorf("%s: token %d after %d, want larger", what, l.Token(), last)
		}
		last = l.Token()
		if err := l.Release(opCtx(t, 5*time.Second)); err != nil {
			t.Fatalf("%s: Release = %v", what, err)
		}
	}
	for round := range 3 {
		c := cs[round%len(cs)]
		m, _ := c.Mutex(name)
		l, err := m.Lock(opCtx(t, 10*time.Second))
		check("mutex", l, err)
		rw, _ := c.RWMutex(name)
		l, err = rw.RLock(opCtx(t, 10*time.Second))
		check("read", l, err)
		l, err = rw.Lock(opCtx(t, 10*time.Second))
		check("write", l, err)
		s, _ := c.Semaphore(name, 2)
		l, err = s.Acquire(opCtx(t, 10*time.Second))
		check("permit", l, err)
		el, _ := c.Election(name)
		ld, err := el.Campaign(opCtx(t, 10*time.Second))
		if err != nil {
			t.Fatalf("Campaign = %v", err)
		}
		if ld.Epoch() <= last {
			t.Errorf("leader: epoch %d after %d, want larger", ld.Epoch(), last)
		}
		last = ld.Epoch()
		if err := ld.Resign(opCtx(t, 5*time.Second), baton.ResignPlan{}); err != nil {
			t.Fatalf("Resign = %v", err)
		}
	}
}
