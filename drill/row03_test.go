package drill_test

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/baton-go/baton/drill"
	"github.com/baton-go/baton/drill/drilltest"
)

// TestRow03HolderKilled: the holder of the RW lock's write side, of a
// semaphore permit, of the leadership runs in a child process, which is
// killed.
//
//   - SIGKILL: nothing is released; the session (ZooKeeper) or lease
//     (etcd) expires, and the next waiter is granted within TTL +
//     max(0.5 s, TTL/4) of the kill (I5) with a larger token; afterwards
//     no entry of the dead holder is left (I8).
//   - SIGTERM: the child's handler releases, as `baton run` does; the
//     release is visible to the waiter within a round trip, not a TTL.
//
// A dead process writes nothing, so the fault cannot break exclusion at
// the resource: the unfenced control must stay green here (rows 2, 4 and
// 8 are where it must go red).
func TestRow03HolderKilled(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e *engine) {
		forEachRecipe(t, e, func(t *testing.T, rc recipe) {
			for _, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGTERM} {
				t.Run(sig.String(), func(t *testing.T) {
					trials(t, e, 1, func(t *testing.T, e *engine, seed uint64) { holderKilled(t, e, rc, seed, sig) })
				})
			}
		})
	})
}

func holderKilled(t *testing.T, e *engine, rc recipe, seed uint64, sig syscall.Signal) {
	run := drilltest.Start(t, seed)
	name := recipeName("row03", e, rc, seed)
	st := newStage(t, run, rc)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	ch := startRecipeHolder(t, run, e, rc, "old", name, st.res.spec)
	acq := ch.await(t, 20*time.Second, "acquire", func(ev drill.Event) bool { return ev.Op == drill.OpAcquire && ev.Phase != drill.Invoke })
	if acq.Phase != drill.Ok {
		t.Fatalf("holder's acquire = %s %s, want ok", acq.Phase, acq.Detail)
	}
	ch.await(t, 20*time.Second, "ready", func(ev drill.Event) bool { return ev.Op == "ready" })

	// The semaphore's other permit is held throughout by a peer, so the
	// waiter can only get the dead holder's.
	queued := 1
	var peer *actor
	var pg role
	if rc.name == "sem" {
		peer = newActor(t, run, e, rc, "peer", name, clientOpts{})
		var err error
		if pg, err = peer.take(ctx); err != nil {
			t.Fatalf("peer's acquire = %v", err)
		}
		if ferr, uerr := st.begin(ctx, run.Rec, peer.id, pg); ferr != nil || uerr != nil {
			t.Fatalf("peer's enter = %v, %v", ferr, uerr)
		}
		queued = 2
	}
	next := newActor(t, run, e, rc, "new", name, clientOpts{})
	type result struct {
		g   role
		err error
	}
	got := make(chan result, 1)
	go func() { // owner: this test, which receives on got
		g, err := next.take(ctx)
		got <- result{g, err}
	}()
	waitQueue(t, next, queued+1)

	run.Rec.Fault("old", sig.String()) // not healed: the process is gone
	killedAt := drill.Now()
	ch.signal(t, sig)
	bound := e.ttl + max(500*time.Millisecond, e.ttl/4)
	if sig == syscall.SIGTERM {
		// "Within 1 RTT": a loopback round trip is a millisecond; the child
		// must also run its handler and the waiter hear its watch. 1 s
		// leaves room for a loaded CI machine under -race, and is far below
		// the TTL an unreleased entry would take.
		bound = time.Second
	}
	var r result
	select {
	case r = <-got:
	case <-time.After(2*e.ttl + time.Second):
		t.Fatalf("waiter not granted within 2×TTL+1s of the holder's %v", sig)
	}
	if r.err != nil {
		t.Fatalf("waiter's acquire = %v, want a grant after the holder's %v", r.err, sig)
	}
	grantedAt := drill.Now()
	if ferr, uerr := st.begin(ctx, run.Rec, next.id, r.g); ferr != nil || uerr != nil {
		t.Errorf("new holder's enter = %v, %v", ferr, uerr)
	}
	for range 2 {
		if ferr, uerr := st.work(ctx, run.Rec, next.id, r.g); ferr != nil || uerr != nil {
			t.Errorf("new holder's work = %v, %v; want accepted", ferr, uerr)
		}
	}
	st.end(ctx, run.Rec, next.id, r.g)
	if err := next.release(ctx, r.g); err != nil {
		t.Errorf("new holder's release = %v", err)
	}
	if peer != nil {
		if ferr, uerr := st.work(ctx, run.Rec, peer.id, pg); ferr != nil || uerr != nil {
			t.Errorf("peer's work = %v, %v; want accepted", ferr, uerr)
		}
		st.end(ctx, run.Rec, peer.id, pg)
		if err := peer.release(ctx, pg); err != nil {
			t.Errorf("peer's release = %v", err)
		}
	}
	if r.g.lease.Token() <= acq.Token {
		t.Errorf("new holder's token %d, want > the killed holder's %d (I2)", r.g.lease.Token(), acq.Token)
	}

	events := run.Rec.Events()
	if sig == syscall.SIGTERM {
		rel := ch.await(t, 10*time.Second, "release", func(ev drill.Event) bool { return ev.Op == drill.OpRelease && ev.Phase != drill.Invoke })
		if rel.Phase != drill.Ok {
			t.Errorf("holder's release on SIGTERM = %s %s, want ok", rel.Phase, rel.Detail)
		}
		t.Logf("SIGTERM → child released %v later → waiter granted %v after the release",
			time.Duration(rel.T-killedAt), time.Duration(grantedAt-rel.T))
		if d := time.Duration(grantedAt - killedAt); d > bound {
			t.Errorf("waiter granted %v after the holder's SIGTERM, want ≤ %v (the release must be visible within a round trip)", d, bound)
		}
		// The holder released before anyone else was granted (I7). (A
		// killed process cannot be told anything: after SIGKILL the
		// resource is the judge.)
		st.checkHolders(run, next.name)
	} else {
		t.Logf("waiter granted %v after SIGKILL (bound %v)", time.Duration(grantedAt-killedAt), bound)
		run.Report(drill.CheckProgress(events, next.name, "old", killedAt, bound))
	}
	st.check(t, run, false)
	// Nothing of the dead holder is left once its session expired (I8).
	st.orphans(ctx, run, next, 2*e.ttl)
}
