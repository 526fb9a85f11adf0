package zklock_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/batontest/testenv"
	"github.com/baton-go/baton/faultproxy"
	"github.com/baton-go/baton/zklock"
)

func proxy(t *testing.T) *faultproxy.Proxy {
	t.Helper()
	p, err := faultproxy.Start(testenv.ZK(t))
	if err != nil {
		t.Fatalf("faultproxy.Start = %v", err)
	}
	t.Cleanup(p.Close)
	return p
}

// TestNegotiatedTimeout: the server raises a timeout below its minimum
// (400ms on the test server); baton times the session from what the server
// enforces, read off the wire.
func TestNegotiatedTimeout(t *testing.T) {
	for _, tc := range []struct{ ask, want time.Duration }{
		{100 * time.Millisecond, 400 * time.Millisecond},
		{1500 * time.Millisecond, 1500 * time.Millisecond},
	} {
		c := dial(t, "", zklock.Options{SessionTimeout: tc.ask})
		if got := c.SessionTimeout(); got != tc.want {
			t.Errorf("SessionTimeout() after asking %v = %v, want %v", tc.ask, got, tc.want)
		}
	}
}

type stamped struct {
	st baton.State
	at time.Time
}

// record sends every state of l with the time it was seen, until l ends.
// Owner: the test; it returns when the lease ends.
func record(l *baton.Lease) <-chan stamped {
	out := make(chan stamped, 16)
	go func() {
		defer close(out)
		for {
			st, ch := l.Observe()
			out <- stamped{st, time.Now()}
			if st.Ended() {
				return
			}
			<-ch
		}
	}()
	return out
}

// TestSessionLossHolder partitions a holder for longer than its session
// timeout: it must be told Suspended, then Lost before the server expires
// the session (so before the waiter is granted), with a context cause
// wrapping ErrLost; after the partition heals the client runs a new session.
func TestSessionLossHolder(t *testing.T) {
	const timeout = time.Second
	p := proxy(t)
	a := dial(t, p.Addr, zklock.Options{SessionTimeout: timeout})
	b := dial(t, "", zklock.Options{SessionTimeout: timeout})
	name := lockName(t)
	la := lock(t, mutex(t, a, name))
	states := record(la)
	oldSession := a.SessionID()

	type result struct {
		l   *baton.Lease
		err error
		at  time.Time
	}
	got := make(chan result, 1)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	mb := mutex(t, b, name)
	go func() {
		l, err := mb.Lock(ctx)
		got <- result{l, err, time.Now()}
	}()
	eventually(t, 2*time.Second, "waiter queued", func() bool { return len(entries(t, b, name)) == 2 })

	cut := time.Now()
	if err := p.Blackhole(""); err != nil {
		t.Fatalf("Blackhole = %v", err)
	}
	var seen []baton.State
	var lostAt time.Time
	for s := range states {
		seen = append(seen, s.st)
		lostAt = s.at
	}
	if len(seen) != 3 || seen[0] != baton.Held || seen[1] != baton.Suspended || seen[2] != baton.Lost {
		t.Fatalf("holder states = %v, want [held suspended lost]", seen)
	}
	t.Logf("suspended→lost %v after the partition; session timeout %v", lostAt.Sub(cut), timeout)
	if d := lostAt.Sub(cut); d > timeout {
		t.Errorf("Lost %v after the partition, want before the %v session timeout", d, timeout)
	}
	if err := context.Cause(la.Context()); !errors.Is(err, baton.ErrLost) {
		t.Errorf("lease cause = %v, want %v", err, baton.ErrLost)
	}
	if err := la.Release(context.Background()); !errors.Is(err, baton.ErrLost) {
		t.Errorf("Release of a lost lease = %v, want %v", err, baton.ErrLost)
	}

	r := <-got
	if r.err != nil {
		t.Fatalf("Lock(%q) by the waiter = %v", name, r.err)
	}
	t.Logf("waiter granted %v after the partition", r.at.Sub(cut))
	if !r.at.After(lostAt) {
		t.Errorf("waiter granted at %v, before the holder was told Lost at %v", r.at, lostAt)
	}
	if r.l.Token() <= la.Token() {
		t.Errorf("waiter token = %d, want > %d", r.l.Token(), la.Token())
	}
	release(t, r.l)

	p.Heal()
	eventually(t, 10*time.Second, "new session after heal", func() bool {
		id := a.SessionID()
		return id != 0 && id != oldSession
	})
	l := lock(t, mutex(t, a, name))
	release(t, l)
}

// TestSessionLossWaiter is fault 12 (CURATOR-604): a waiter whose own
// session dies fails with ErrSessionLost and never acquires on its dead
// queue position.
func TestSessionLossWaiter(t *testing.T) {
	const timeout = time.Second
	p := proxy(t)
	a := dial(t, "", zklock.Options{SessionTimeout: timeout})
	w := dial(t, p.Addr, zklock.Options{SessionTimeout: timeout})
	name := lockName(t)
	la := lock(t, mutex(t, a, name))
	defer release(t, la)

	got := make(chan error, 1)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	mw := mutex(t, w, name)
	go func() {
		l, err := mw.Lock(ctx)
		if l != nil {
			l.Release(context.Background())
		}
		got <- err
	}()
	eventually(t, 2*time.Second, "waiter queued", func() bool { return len(entries(t, a, name)) == 2 })
	cut := time.Now()
	if err := p.Blackhole(""); err != nil {
		t.Fatalf("Blackhole = %v", err)
	}
	err := <-got
	if !errors.Is(err, baton.ErrSessionLost) {
		t.Fatalf("Lock(%q) by a partitioned waiter = %v, want %v", name, err, baton.ErrSessionLost)
	}
	if d := time.Since(cut); d > timeout+250*time.Millisecond {
		t.Errorf("waiter failed %v after the partition, want within the session timeout", d)
	}
	// The server expires the waiter's session and its entry goes.
	eventually(t, 3*time.Second, "waiter entry expired", func() bool { return len(entries(t, a, name)) == 1 })
}

// TestLostCreateResponse is fault 1: the connection closes as soon as the
// server answers (the create's answer is lost after the server applied
// it). The acquire must end with exactly one entry, its own.
func TestLostCreateResponse(t *testing.T) {
	p := proxy(t)
	a := dial(t, p.Addr, zklock.Options{SessionTimeout: 2 * time.Second})
	name := lockName(t)
	m := mutex(t, a, name)
	release(t, lock(t, m)) // the directory exists: the lost answer is the create's
	sid := a.SessionID()
	if err := p.CutAfter(faultproxy.Downstream, 0); err != nil {
		t.Fatalf("CutAfter = %v", err)
	}
	heal := time.AfterFunc(150*time.Millisecond, p.Heal)
	defer heal.Stop()
	l := lock(t, m)
	if a.SessionID() != sid {
		t.Fatalf("session changed from 0x%x to 0x%x, want the same session across the cut", sid, a.SessionID())
	}
	es := entries(t, a, name)
	// Sequence 1: the lost create was adopted, not re-created.
	if len(es) != 1 || l.Owner() != mustDir(t, a, name)+"/"+es[0] || !strings.HasSuffix(es[0], "-lock-0000000001") {
		t.Fatalf("Entries(%q) = %v, want exactly the lease's %s with sequence 1", name, es, l.Owner())
	}
	release(t, l)
}

func mustDir(t *testing.T, c *zklock.Client, name string) string {
	t.Helper()
	d, err := c.Dir(name)
	if err != nil {
		t.Fatalf("Dir(%q) = %v", name, err)
	}
	return d
}

// TestShortPartition: a partition healed before the session can expire
// suspends the holder and then gives the lease back, on the same session.
func TestShortPartition(t *testing.T) {
	const timeout = 3 * time.Second
	p := proxy(t)
	a := dial(t, p.Addr, zklock.Options{SessionTimeout: timeout})
	name := lockName(t)
	l := lock(t, mutex(t, a, name))
	defer release(t, l)
	sid := a.SessionID()
	states := record(l)
	if s := <-states; s.st != baton.Held {
		t.Fatalf("state = %v, want held", s.st)
	}
	cut := time.Now()
	if err := p.Blackhole(""); err != nil {
		t.Fatalf("Blackhole = %v", err)
	}
	if s := <-states; s.st != baton.Suspended {
		t.Fatalf("state after the partition = %v, want suspended", s.st)
	}
	t.Logf("suspended %v after the partition", time.Since(cut))
	p.Heal()
	select {
	case s := <-states:
		if s.st != baton.Held {
			t.Fatalf("state after healing = %v, want held", s.st)
		}
	case <-time.After(timeout):
		t.Fatalf("still %v %v after healing", l.State(), timeout)
	}
	if a.SessionID() != sid {
		t.Fatalf("session 0x%x after healing, want the same 0x%x", a.SessionID(), sid)
	}
}

// TestSessionTimeoutCap: ZooKeeper's wire carries the session timeout as
// int32 milliseconds, which a timeout of about 25 days overflows into a
// negative one. Dial refuses anything above baton.MaxTTL before it
// connects, and accepts MaxTTL itself (the server clamps it into its own
// maximum).
func TestSessionTimeoutCap(t *testing.T) {
	srv := testenv.ZK(t)
	for _, d := range []time.Duration{baton.MaxTTL + time.Millisecond, 25 * 24 * time.Hour} {
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		c, err := zklock.Dial(ctx, []string{srv}, zklock.Options{SessionTimeout: d})
		cancel()
		if !errors.Is(err, baton.ErrInvalidOption) {
			if c != nil {
				_ = c.Close()
			}
			t.Errorf("Dial(SessionTimeout %v) = %v, want an error wrapping %v", d, err, baton.ErrInvalidOption)
		}
	}
	c := dial(t, "", zklock.Options{SessionTimeout: baton.MaxTTL})
	if got := c.SessionTimeout(); got <= 0 || got > baton.MaxTTL {
		t.Errorf("SessionTimeout() after asking %v = %v, want in (0, %v]", baton.MaxTTL, got, baton.MaxTTL)
	}
}
