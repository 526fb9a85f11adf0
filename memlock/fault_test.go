package memlock_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/memlock"
)

// TestTokens: the token is the directory's counter at the granting read,
// which every create and delete moves; the token floor is added.
func TestTokens(t *testing.T) {
	for _, tc := range []struct {
		name  string
		floor uint64
		want  [2]uint64
	}{
		{"NoFloor", 0, [2]uint64{1, 3}},
		{"Floor", 1000, [2]uint64{1001, 1003}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, _ := newServer(t, memlock.Options{TokenFloor: tc.floor})
			a, b := srv.Client("a"), srv.Client("b")
			l1 := lock(t, a, "jobs/1") // create: 1
			release(t, l1)             // delete: 2
			l2 := lock(t, b, "jobs/1") // create: 3
			defer release(t, l2)
			if got := [2]uint64{l1.Token(), l2.Token()}; got != tc.want {
				t.Errorf("tokens = %v, want %v", got, tc.want)
			}
			if l2.Engine() != "mem" {
				t.Errorf("Engine() = %q, want %q", l2.Engine(), "mem")
			}
		})
	}
}

// TestEntries: the server lists a directory's entries in queue order with
// the client and session that own them.
func TestEntries(t *testing.T) {
	srv, _ := newServer(t, memlock.Options{})
	a, b := srv.Client("a"), srv.Client("")
	l := lock(t, a, "/jobs/1/")
	defer release(t, l)
	ch, _ := lockAsync(t, b, "jobs/1", nil)
	eventually(t, "waiter queued", func() bool { return len(srv.Entries("jobs/1")) == 2 })
	want := []memlock.Entry{
		{Name: "lock-0000000001", Client: "a", Session: "a#1"},
		{Name: "lock-0000000002", Client: "client-2", Session: "client-2#1"},
	}
	if got := srv.Entries("jobs/1"); !slices.Equal(got, want) {
		t.Errorf("Entries(jobs/1) = %v, want %v", got, want)
	}
	if !pending(ch) {
		t.Errorf("waiter granted while the holder holds")
	}
}

// TestPartitionHealed: a partitioned holder is Suspended at once; healed
// before the TTL it is Held again, its entry never left, and the waiter is
// granted only when it releases.
func TestPartitionHealed(t *testing.T) {
	srv, fake := newServer(t, memlock.Options{})
	a, b := srv.Client("a"), srv.Client("b")
	l := lock(t, a, "x")
	ch, _ := lockAsync(t, b, "x", nil)
	eventually(t, "waiter queued", func() bool { return len(srv.Entries("x")) == 2 })

	ctl(a).Partition()
	awaitState(t, l, baton.Suspended)
	fake.Advance(ttl - time.Millisecond)
	if st := l.State(); st != baton.Suspended {
		t.Errorf("State() 1ms before the TTL = %v, want %v", st, baton.Suspended)
	}
	ctl(a).Heal()
	awaitState(t, l, baton.Held)
	if got := owners(srv, "x"); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("owners after Heal = %v, want [a b]", got)
	}
	fake.Advance(time.Hour) // the cancelled expiry must not fire
	if !pending(ch) || l.State() != baton.Held {
		t.Fatalf("after Heal and an hour: waiter granted or holder %v, want holder %v", l.State(), baton.Held)
	}
	release(t, l)
	r := await(t, ch)
	if r.err != nil {
		t.Fatalf("waiter's Lock = %v", r.err)
	}
	defer release(t, r.l)
	if r.l.Token() != 3 {
		t.Errorf("waiter's token = %d, want 3 (create 1, create 2, delete 3)", r.l.Token())
	}
}

// TestPartitionExpires: once the TTL passes, the holder is Lost (its
// context cancelled with ErrLost and ErrSessionLost) before the server deletes its entry; the
// waiter is granted with a larger token; the healed client opens a new
// session.
func TestPartitionExpires(t *testing.T) {
	srv, fake := newServer(t, memlock.Options{})
	a, b := srv.Client("a"), srv.Client("b")
	l := lock(t, a, "x")
	ch, _ := lockAsync(t, b, "x", l)
	eventually(t, "waiter queued", func() bool { return len(srv.Entries("x")) == 2 })

	ctl(a).Partition()
	awaitState(t, l, baton.Suspended)
	fake.Advance(ttl)
	r := await(t, ch)
	if r.err != nil {
		t.Fatalf("waiter's Lock = %v", r.err)
	}
	defer release(t, r.l)
	if r.other != baton.Lost {
		t.Errorf("holder's State() when the waiter was granted = %v, want %v", r.other, baton.Lost)
	}
	if cause := context.Cause(l.Context()); !errors.Is(cause, baton.ErrLost) || !errors.Is(cause, baton.ErrSessionLost) {
		t.Errorf("holder's context cause = %v, want an error wrapping %v and %v", cause, baton.ErrLost, baton.ErrSessionLost)
	}
	if err := l.Err(); !errors.Is(err, baton.ErrSessionLost) {
		t.Errorf("holder's Err() = %v, want an error wrapping %v: its session ended", err, baton.ErrSessionLost)
	}
	if r.l.Token() != 3 || l.Token() != 1 {
		t.Errorf("tokens = %d then %d, want 1 then 3", l.Token(), r.l.Token())
	}
	if got := owners(srv, "x"); !slices.Equal(got, []string{"b"}) {
		t.Errorf("owners after expiry = %v, want [b]", got)
	}
	if err := l.Release(context.Background()); !errors.Is(err, baton.ErrLost) {
		t.Errorf("Release of the lost lease = %v, want an error wrapping %v", err, baton.ErrLost)
	}

	ctl(a).Heal()
	m, _ := a.Mutex("x")
	if _, err := m.TryLock(context.Background()); !errors.Is(err, baton.ErrNotAcquired) {
		t.Errorf("TryLock after Heal = %v, want an error wrapping %v", err, baton.ErrNotAcquired)
	}
	if id := memlock.SessionID(ctl(a)); id != "a#2" {
		t.Errorf("SessionID() after the expiry = %q, want %q", id, "a#2")
	}
}

// TestExpire: Expire ends the session at once and returns after the
// holder is Lost and its entries are gone.
func TestExpire(t *testing.T) {
	srv, _ := newServer(t, memlock.Options{})
	a := srv.Client("a")
	l1, l2 := lock(t, a, "x"), lock(t, a, "y")
	ctl(a).Expire()
	for _, l := range []*baton.Lease{l1, l2} {
		if st := l.State(); st != baton.Lost {
			t.Errorf("lease of %q after Expire: State() = %v, want %v", l.Name(), st, baton.Lost)
		}
	}
	if got := append(srv.Entries("x"), srv.Entries("y")...); len(got) != 0 {
		t.Errorf("entries after Expire = %v, want none", got)
	}
	l3 := lock(t, a, "x")
	defer release(t, l3)
	if id := memlock.SessionID(ctl(a)); id != "a#2" {
		t.Errorf("SessionID() = %q, want %q", id, "a#2")
	}
	if l3.Token() != 3 {
		t.Errorf("token after Expire = %d, want 3", l3.Token())
	}
}

// TestWatchWaitsForHeal: a release that happens while the waiter is cut
// off reaches it only when it is healed.
func TestWatchWaitsForHeal(t *testing.T) {
	srv, _ := newServer(t, memlock.Options{})
	a, b := srv.Client("a"), srv.Client("b")
	l := lock(t, a, "x")
	ch, _ := lockAsync(t, b, "x", nil)
	eventually(t, "waiter queued", func() bool { return len(srv.Entries("x")) == 2 })
	ctl(b).Partition()
	release(t, l)
	if !pending(ch) {
		t.Fatalf("a cut-off waiter was granted")
	}
	ctl(b).Heal()
	r := await(t, ch)
	if r.err != nil {
		t.Fatalf("waiter's Lock after Heal = %v", r.err)
	}
	release(t, r.l)
}

// TestAbandonWhileCutOff: a waiter cancelled while cut off fails with
// ErrUnavailable; its entry is deleted as soon as it is healed.
func TestAbandonWhileCutOff(t *testing.T) {
	srv, _ := newServer(t, memlock.Options{})
	a, b := srv.Client("a"), srv.Client("b")
	l := lock(t, a, "x")
	defer release(t, l)
	ch, cancel := lockAsync(t, b, "x", nil)
	eventually(t, "waiter queued", func() bool { return len(srv.Entries("x")) == 2 })
	ctl(b).Partition()
	cancel()
	r := await(t, ch)
	if !errors.Is(r.err, baton.ErrUnavailable) || !errors.Is(r.err, context.Canceled) {
		t.Errorf("cancelled cut-off waiter's Lock = %v, want an error wrapping %v and %v", r.err, baton.ErrUnavailable, context.Canceled)
	}
	if got := owners(srv, "x"); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("owners while cut off = %v, want [a b]", got)
	}
	ctl(b).Heal()
	if got := owners(srv, "x"); !slices.Equal(got, []string{"a"}) {
		t.Errorf("owners after Heal = %v, want [a]", got)
	}
}

// TestCutOffCall: a call of a partitioned client waits for Heal and fails
// with ErrUnavailable when its context ends first.
func TestCutOffCall(t *testing.T) {
	srv, _ := newServer(t, memlock.Options{})
	a := srv.Client("a")
	ctl(a).Partition()
	m, _ := a.Mutex("x")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if _, err := m.Lock(ctx); !errors.Is(err, baton.ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Lock while cut off = %v, want an error wrapping %v and %v", err, baton.ErrUnavailable, context.DeadlineExceeded)
	}
	ctl(a).Heal()
	release(t, lock(t, a, "x"))
}

// TestCloseWhilePartitioned: Close of a cut-off client (a crashed process)
// tells its leases at once, but the server keeps the entry until the TTL.
func TestCloseWhilePartitioned(t *testing.T) {
	srv, fake := newServer(t, memlock.Options{})
	a, b := srv.Client("a"), srv.Client("b")
	l := lock(t, a, "x")
	ctl(a).Partition()
	if err := a.Close(); err != nil {
		t.Errorf("Close() = %v, want nil", err)
	}
	awaitState(t, l, baton.Lost)
	if got := owners(srv, "x"); !slices.Equal(got, []string{"a"}) {
		t.Errorf("owners before the TTL = %v, want [a]", got)
	}
	fake.Advance(ttl)
	eventually(t, "entry expired", func() bool { return len(srv.Entries("x")) == 0 })
	release(t, lock(t, b, "x"))
	if _, err := a.Mutex("x"); !errors.Is(err, baton.ErrClosed) {
		t.Errorf("Mutex on a closed client = %v, want an error wrapping %v", err, baton.ErrClosed)
	}
}

// TestServerClose: closing the server ends every session and every wait;
// its clients then refuse with ErrClosed.
func TestServerClose(t *testing.T) {
	srv, _ := newServer(t, memlock.Options{})
	a, b := srv.Client("a"), srv.Client("b")
	l := lock(t, a, "x")
	ch, _ := lockAsync(t, b, "x", nil)
	eventually(t, "waiter queued", func() bool { return len(srv.Entries("x")) == 2 })
	ctl(b).Partition() // a partitioned session ends too
	srv.Close()
	if st := l.State(); st != baton.Lost {
		t.Errorf("holder after Close: State() = %v, want %v", st, baton.Lost)
	}
	if r := await(t, ch); !errors.Is(r.err, baton.ErrSessionLost) {
		t.Errorf("waiter's Lock after Close = %v, want an error wrapping %v", r.err, baton.ErrSessionLost)
	}
	if got := srv.Entries("x"); len(got) != 0 {
		t.Errorf("entries after Close = %v, want none", got)
	}
	m, err := srv.Client("c").Mutex("x")
	if m != nil || !errors.Is(err, baton.ErrClosed) {
		t.Errorf("Mutex of a client of a closed server = %v, %v, want an error wrapping %v", m, err, baton.ErrClosed)
	}
}

// TestRewindTokens: a rewound counter hands out tokens a resource has
// already seen; moving it forward is refused.
func TestRewindTokens(t *testing.T) {
	srv, _ := newServer(t, memlock.Options{})
	a := srv.Client("a")
	l1 := lock(t, a, "x") // 1
	release(t, l1)        // 2
	srv.RewindTokens("x", 0)
	l2 := lock(t, a, "x") // 1 again
	defer release(t, l2)
	if l1.Token() != 1 || l2.Token() != 1 {
		t.Errorf("tokens = %d, %d, want 1, 1", l1.Token(), l2.Token())
	}
	defer func() {
		if recover() == nil {
			t.Errorf("RewindTokens forward did not panic")
		}
	}()
	srv.RewindTokens("x", 100)
}

// TestLoseCreateResponse: a create whose response is lost is adopted, not
// repeated.
func TestLoseCreateResponse(t *testing.T) {
	srv, _ := newServer(t, memlock.Options{})
	a := srv.Client("a")
	ctl(a).LoseResponse(memlock.Create)
	l := lock(t, a, "x")
	if got := owners(srv, "x"); !slices.Equal(got, []string{"a"}) {
		t.Errorf("owners after a lost create response = %v, want [a]", got)
	}
	release(t, l)
	if got := srv.Entries("x"); len(got) != 0 {
		t.Errorf("entries after Release = %v, want none", got)
	}
}

// TestLoseDeleteResponse: a delete whose response is lost took effect;
// Release reports the unknown outcome and the lease has ended (Lost), so a
// second Release returns the loss without touching the server.
func TestLoseDeleteResponse(t *testing.T) {
	srv, _ := newServer(t, memlock.Options{})
	a := srv.Client("a")
	l := lock(t, a, "x")
	ctl(a).LoseResponse(memlock.Delete)
	if err := l.Release(context.Background()); !errors.Is(err, memlock.ErrResponseLost) {
		t.Errorf("Release with a lost response = %v, want an error wrapping %v", err, memlock.ErrResponseLost)
	}
	if st := l.State(); st != baton.Lost || !errors.Is(l.Err(), memlock.ErrResponseLost) {
		t.Errorf("after the unknown release: State() = %v, Err() = %v, want %v with the release's error", st, l.Err(), baton.Lost)
	}
	if got := srv.Entries("x"); len(got) != 0 {
		t.Errorf("entries after the lost delete response = %v, want none", got)
	}
	if err := l.Release(context.Background()); !errors.Is(err, baton.ErrLost) {
		t.Errorf("second Release = %v, want an error wrapping %v", err, baton.ErrLost)
	}
}
