package kubelock_test

import (
	"os"
	"testing"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/kubelock"
)

// TestInspect shows a holder (a writer) with its token, owner and holder
// record (host, pid, program, labels), and a waiter (a reader: a mutex's
// waiters keep no intent) with its ticket, through *baton.Client.
func TestInspect(t *testing.T) {
	t.Parallel()
	proc := baton.Process{Host: "web-1", PID: os.Getpid(), Program: "worker", Labels: map[string]string{"team": "pay"}}
	c1 := newClient(t, kubelock.Options{Process: proc})
	c2 := newClient(t, kubelock.Options{})
	name := lockName(t)
	m1, _ := c1.RWMutex(name)
	m2, _ := c2.RWMutex(name)
	l, err := m1.Lock(opCtx(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { // the waiter; owned by this test, which reads done
		l2, err := m2.RLock(opCtx(t, 20*time.Second))
		if err == nil {
			err = l2.Release(opCtx(t, 5*time.Second))
		}
		done <- err
	}()
	var in baton.Inspection
	if !eventually(5*time.Second, func() bool {
		in, err = c1.Baton().Inspect(opCtx(t, 5*time.Second), name)
		return err == nil && len(in.Waiters) == 1
	}) {
		t.Fatalf("Inspect = %+v, %v; want one holder and one waiter", in, err)
	}
	if in.Engine != "kube" || len(in.Holders) != 1 {
		t.Fatalf("Inspect = %+v, want engine kube and one holder", in)
	}
	h := in.Holders[0]
	if h.Owner != l.Owner() || h.Token != l.Token() || h.Mode != "write" {
		t.Errorf("holder = %+v, want owner %s, token %d, mode write", h, l.Owner(), l.Token())
	}
	if h.Host != "web-1" || h.PID != os.Getpid() || h.Program != "worker" || h.Labels["team"] != "pay" {
		t.Errorf("holder's process = %+v, want %+v", h.Process, proc)
	}
	if h.Left <= 0 || h.Left > testTTL || h.Dead {
		t.Errorf("holder Left %v, Dead %v; want in (0, %v], alive", h.Left, h.Dead, testTTL)
	}
	w := in.Waiters[0]
	if w.Token <= h.Token || w.Mode != "read" || w.Host == "" || w.PID != os.Getpid() {
		t.Errorf("waiter = %+v, want a ticket after the holder's token and this process", w)
	}
	if err := l.Release(opCtx(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("waiter = %v", err)
	}
	es, err := c1.Entries(opCtx(t, 5*time.Second), name)
	if err != nil || len(es) != 0 {
		t.Errorf("Entries after both released = %q, %v, want none", es, err)
	}
}

// TestInspectFlagsExpired cuts a permit holder off: Inspect lists its
// entry Dead once its lease ran out as the inspecting client judges it
// (the entry is still in the Lease: nobody wrote since), and the next
// grant's write drops it.
func TestInspectFlagsExpired(t *testing.T) {
	t.Parallel()
	cut, p := proxied(t, kubelock.Options{})
	c := newClient(t, kubelock.Options{})
	name := lockName(t)
	s1, _ := cut.Semaphore(name, 2)
	l1, err := s1.Acquire(opCtx(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	bc := c.Baton()
	dead := func() (baton.Entry, bool) {
		in, err := bc.Inspect(opCtx(t, 5*time.Second), name)
		if err != nil || len(in.Holders) != 1 {
			t.Fatalf("Inspect = %+v, %v; want one holder", in, err)
		}
		return in.Holders[0], in.Holders[0].Dead
	}
	if h, d := dead(); d || h.Owner != l1.Owner() || h.Mode != "permit" {
		t.Fatalf("holder before the cut = %+v, want %s alive", h, l1.Owner())
	}
	if err := p.Blackhole(""); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	var h baton.Entry
	if !eventually(testTTL+2*time.Second, func() bool { var d bool; h, d = dead(); return d }) {
		t.Fatalf("holder %v after the cut = %+v, want it Dead", time.Since(start), h)
	}
	t.Logf("holder listed Dead %v after the cut: %q", time.Since(start).Round(time.Millisecond), h.Note)
	s2, _ := c.Semaphore(name, 2)
	l2, err := s2.Acquire(opCtx(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	in, err := bc.Inspect(opCtx(t, 5*time.Second), name)
	if err != nil || len(in.Holders) != 1 || in.Holders[0].Owner != l2.Owner() {
		t.Errorf("Inspect after the next grant = %+v, %v; want only its holder", in, err)
	}
	_ = l2.Release(opCtx(t, 5*time.Second))
}
