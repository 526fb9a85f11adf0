package queuekit_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/memlock"
)

// memMutex returns c's mutex called name or stops the test.
func memMutex(t *testing.T, c *baton.Client, name string) *baton.Mutex {
	t.Helper()
	m, err := c.Mutex(name)
	if err != nil {
		t.Fatalf("Mutex(%q) = %v", name, err)
	}
	return m
}

// TestMemMutexFIFO: waiters are granted in the order they queued, one per
// release, each with the token of the read after the release before it.
func TestMemMutexFIFO(t *testing.T) {
	srv, _ := memServer(t)
	names := []string{"a", "b", "c", "d"}
	var ms []*baton.Mutex
	for _, n := range names {
		ms = append(ms, memMutex(t, srv.Client(n), "fifo"))
	}
	l := memStart(t, ms[0].Lock, nil).granted(t, "a: Lock")
	var calls []*memCall
	for i := 1; i < len(ms); i++ {
		calls = append(calls, memStart(t, ms[i].Lock, nil))
		memQueued(t, srv, "fifo", names[:i+1]...)
	}
	leases := []*baton.Lease{l}
	for i, c := range calls {
		for _, later := range calls[i:] {
			later.waiting(t, "Lock of a later waiter")
		}
		memRelease(t, l)
		l = c.granted(t, names[i+1]+": Lock")
		leases = append(leases, l)
	}
	memRelease(t, l)
	// Creates take 1 to 4; each release's delete moves the counter once
	// more before the next holder's granting read.
	memTokens(t, []uint64{1, 5, 6, 7}, leases...)
	memOwners(t, srv, "fifo")
}

// TestMemPausedHolder: a holder cut off from the server is Suspended at
// once and Lost when the session TTL passes; only then is the waiter
// granted, with a larger token.
func TestMemPausedHolder(t *testing.T) {
	srv, fake := memServer(t)
	a, b := srv.Client("a"), srv.Client("b")
	la := memStart(t, memMutex(t, a, "paused").Lock, nil).granted(t, "a: Lock")
	waiter := memStart(t, memMutex(t, b, "paused").Lock, la)
	memQueued(t, srv, "paused", "a", "b")

	memCtl(a).Partition()
	memState(t, la, baton.Suspended)
	fake.Advance(memTTL - time.Millisecond)
	waiter.waiting(t, "b: Lock 1ms before a's session expires")
	if st := la.State(); st != baton.Suspended {
		t.Errorf("a's State() 1ms before expiry = %v, want %v", st, baton.Suspended)
	}

	fake.Advance(time.Millisecond)
	r := waiter.result(t, "b: Lock after a's session expired")
	if r.err != nil {
		t.Fatalf("b: Lock = %v", r.err)
	}
	defer memRelease(t, r.l)
	if r.other != baton.Lost {
		t.Errorf("a's State() when b was granted = %v, want %v", r.other, baton.Lost)
	}
	if cause := context.Cause(la.Context()); !errors.Is(cause, baton.ErrLost) {
		t.Errorf("a's context cause = %v, want an error wrapping %v", cause, baton.ErrLost)
	}
	// a: create 1; b: create 2; a's expired entry deleted: 3.
	memTokens(t, []uint64{1, 3}, la, r.l)
	memOwners(t, srv, "paused", "b")
}

// TestMemCancelledWaiter: a waiter whose context ends returns the context's
// error and its entry is gone by then; the waiter behind it moves up and is
// granted at the next release.
func TestMemCancelledWaiter(t *testing.T) {
	srv, _ := memServer(t)
	a, b, c := srv.Client("a"), srv.Client("b"), srv.Client("c")
	la := memStart(t, memMutex(t, a, "cancel").Lock, nil).granted(t, "a: Lock")
	wb := memStart(t, memMutex(t, b, "cancel").Lock, nil)
	memQueued(t, srv, "cancel", "a", "b")
	wc := memStart(t, memMutex(t, c, "cancel").Lock, nil)
	memQueued(t, srv, "cancel", "a", "b", "c")

	wb.cancel()
	if r := wb.result(t, "b: cancelled Lock"); !errors.Is(r.err, context.Canceled) {
		t.Errorf("b: cancelled Lock = %v, %v, want an error wrapping %v", r.l, r.err, context.Canceled)
	}
	memOwners(t, srv, "cancel", "a", "c")
	wc.waiting(t, "c: Lock while a holds")

	memRelease(t, la)
	lc := wc.granted(t, "c: Lock")
	defer memRelease(t, lc)
	// a 1, b 2, c 3, b's entry deleted 4, a's 5.
	memTokens(t, []uint64{1, 5}, la, lc)
}

// TestMemLostCreateResponse: an acquire whose create response is lost
// adopts the entry that landed: no duplicate while it waits, nothing left
// when it gives up or releases.
func TestMemLostCreateResponse(t *testing.T) {
	srv, _ := memServer(t)
	a, b := srv.Client("a"), srv.Client("b")
	ma, mb := memMutex(t, a, "lostcreate"), memMutex(t, b, "lostcreate")
	la := memStart(t, ma.Lock, nil).granted(t, "a: Lock")

	memCtl(b).LoseResponse(memlock.Create)
	if _, err := mb.TryLock(context.Background()); !errors.Is(err, baton.ErrNotAcquired) {
		t.Errorf("b: TryLock after a lost create response = %v, want an error wrapping %v", err, baton.ErrNotAcquired)
	}
	memOwners(t, srv, "lostcreate", "a")

	memCtl(b).LoseResponse(memlock.Create)
	wb := memStart(t, mb.Lock, nil)
	memQueued(t, srv, "lostcreate", "a", "b")
	wb.waiting(t, "b: Lock while a holds")
	memRelease(t, la)
	lb := wb.granted(t, "b: Lock")
	memOwners(t, srv, "lostcreate", "b")
	memRelease(t, lb)
	memOwners(t, srv, "lostcreate")
}

// TestMemLostDeleteResponse: a release whose delete response is lost
// reports the unknown outcome and ends the lease before the waiter can be
// granted; the entry's cleanup in the background does not touch the new
// holder.
func TestMemLostDeleteResponse(t *testing.T) {
	srv, _ := memServer(t)
	a, b := srv.Client("a"), srv.Client("b")
	la := memStart(t, memMutex(t, a, "lostdelete").Lock, nil).granted(t, "a: Lock")
	wb := memStart(t, memMutex(t, b, "lostdelete").Lock, nil)
	memQueued(t, srv, "lostdelete", "a", "b")

	memCtl(a).LoseResponse(memlock.Delete)
	if err := la.Release(context.Background()); !errors.Is(err, memlock.ErrResponseLost) {
		t.Errorf("a: Release with a lost response = %v, want an error wrapping %v", err, memlock.ErrResponseLost)
	}
	if st := la.State(); st != baton.Lost {
		t.Errorf("a after the unknown release: State() = %v, want %v", st, baton.Lost)
	}
	lb := wb.granted(t, "b: Lock after a's entry was deleted")
	defer memRelease(t, lb)
	memTokens(t, []uint64{1, 3}, la, lb)
	if err := la.Release(context.Background()); !errors.Is(err, baton.ErrLost) {
		t.Errorf("a: second Release = %v, want an error wrapping %v", err, baton.ErrLost)
	}
	memOwners(t, srv, "lostdelete", "b")
	if st := lb.State(); st != baton.Held {
		t.Errorf("b after a's failed Release: State() = %v, want %v", st, baton.Held)
	}
}

// TestMemFollowerReused: followers are kept for reuse once their last
// lease ended (memlock hands out a session value per acquire, so each
// lock+unlock starts and retires one). Leases on a reused follower still
// follow their session: Suspended on a partition, Held when it heals,
// Lost when it expires.
func TestMemFollowerReused(t *testing.T) {
	srv, _ := memServer(t)
	a := srv.Client("a")
	m := memMutex(t, a, "reused")
	for range 50 {
		memRelease(t, memStart(t, m.Lock, nil).granted(t, "a: Lock"))
	}
	la := memStart(t, m.Lock, nil).granted(t, "a: Lock after 50 lock+unlock")
	lb := memStart(t, memMutex(t, a, "reused-too").Lock, nil).granted(t, "a: Lock of another name")
	memCtl(a).Partition()
	memState(t, la, baton.Suspended)
	memState(t, lb, baton.Suspended)
	memCtl(a).Heal()
	memState(t, la, baton.Held)
	memState(t, lb, baton.Held)
	memRelease(t, lb)
	memCtl(a).Expire()
	memState(t, la, baton.Lost)
}
