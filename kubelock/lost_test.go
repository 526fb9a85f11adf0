package kubelock_test

import (
	"errors"
	"testing"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/kubelock"
)

// TestLostBeforeTakeover cuts a holder off from the apiserver (a
// blackholed fault proxy): its renewals fail, it is told Lost, and only
// after that is a waiter on a healthy connection granted, with a larger
// token, about a TTL after the last renewal it saw.
func TestLostBeforeTakeover(t *testing.T) {
	t.Parallel()
	holder, p := proxied(t, kubelock.Options{})
	waiter := newClient(t, kubelock.Options{})
	name := lockName(t)
	m1, _ := holder.Mutex(name)
	m2, _ := waiter.Mutex(name)
	l1, err := m1.Lock(opCtx(t, 10*time.Second))
	if err != nil {
		t.Fatalf("Lock = %v", err)
	}
	type grant struct {
		l          *baton.Lease
		err        error
		at         time.Time
		holderSeen baton.State
	}
	got := make(chan grant, 1)
	go func() {
		l, err := m2.Lock(opCtx(t, 20*time.Second))
		got <- grant{l, err, time.Now(), l1.State()}
	}()
	time.Sleep(testTTL / 2) // the waiter queues and watches
	cut := time.Now()
	if err := p.Blackhole(""); err != nil {
		t.Fatal(err)
	}
	var lostAt time.Time
	if !eventually(3*testTTL, func() bool { return l1.State() == baton.Lost }) {
		t.Fatalf("holder State() = %v %v after the cut, want Lost", l1.State(), 3*testTTL)
	}
	lostAt = time.Now()
	if !errors.Is(leaseCause(l1), baton.ErrLost) {
		t.Errorf("lost lease's cause = %v, want ErrLost", leaseCause(l1))
	}
	g := <-got
	if g.err != nil {
		t.Fatalf("waiter's Lock = %v", g.err)
	}
	defer func() { _ = g.l.Release(opCtx(t, 5*time.Second)) }()
	t.Logf("holder Lost %v after the cut; waiter granted %v after the cut (holder was %v then)",
		lostAt.Sub(cut).Round(time.Millisecond), g.at.Sub(cut).Round(time.Millisecond), g.holderSeen)
	if g.holderSeen == baton.Held {
		t.Errorf("holder still Held when the waiter was granted: two holders")
	}
	if lostAt.Sub(cut) > testTTL {
		t.Errorf("holder Lost %v after the cut, want within the TTL %v", lostAt.Sub(cut), testTTL)
	}
	if g.at.Sub(cut) > testTTL+time.Second {
		t.Errorf("waiter granted %v after the cut, want within TTL + 1s", g.at.Sub(cut))
	}
	if g.l.Token() <= l1.Token() {
		t.Errorf("token after the takeover %d, want > %d", g.l.Token(), l1.Token())
	}
}
