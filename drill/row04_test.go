package drill_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/drill"
	"github.com/baton-go/baton/drill/drilltest"
	"github.com/baton-go/baton/faultproxy"
)

// TestRow04Partition: the link between the holder of the role (the RW
// lock's writer, a semaphore permit, the leadership) and the server is
// partitioned.
//
// The partition holds bytes instead of dropping them (a latency of an
// hour, removed at the heal): that is what TCP does across a real
// partition, retransmitting until the path is back, so the streams stay
// intact and whatever was in flight arrives late. A blackhole that drops
// bytes would corrupt the stream instead, a different fault (rows 11, 13).
//
//   - short (0.2–0.5×TTL, both ways): no silent loss (I4) — after the heal the
//     holder is either still Held with no other grant in between, or it
//     was told Lost.
//   - long (past the TTL, both ways): the holder is told Suspended before
//     anyone else is granted (I7); the waiter is granted within TTL +
//     max(0.5 s, TTL/4) (I5); the holder's late commit is rejected by the
//     fence (I3) and accepted by the unfenced control, which must go red;
//     after the heal the old holder never believes it holds.
//   - one-way (server→client held): the server still hears the holder, so
//     its session or lease lives until the client itself gives up; the
//     client must declare Lost on its own, before anyone else is granted
//     (I7), and the rest is as for the long partition.
func TestRow04Partition(t *testing.T) {
	forEachNetworkEngine(t, func(t *testing.T, e *engine) {
		forEachRecipe(t, e, func(t *testing.T, rc recipe) {
			for _, kind := range []string{"short", "long", "oneway"} {
				t.Run(kind, func(t *testing.T) {
					trials(t, e, 1, func(t *testing.T, e *engine, seed uint64) { partition(t, e, rc, seed, kind) })
				})
			}
		})
	})
}

// partitionHold is the latency that stands for a partition.
const partitionHold = time.Hour

type grantResult struct {
	g   role
	err error
	at  int64
}

// recipeScene is the common cast of rows 4 and 8: old holds the role (and
// has decided on a write it has not sent), peer holds the semaphore's other
// permit, next waits.
type recipeScene struct {
	run       *drilltest.Run
	st        *stage
	old, next *actor
	peer      *actor
	og, pg    role
	commit    func(context.Context) (error, error)
	got       chan grantResult
}

// setScene builds the scene: old (with oldOpts) takes the role, enters
// and works, decides on a write; peer (semaphore) takes the other permit;
// next queues. It returns once next's entry is in the queue. prepare, if
// set, runs on old before it takes the role (a fault under which it must
// acquire).
func setScene(t *testing.T, ctx context.Context, run *drilltest.Run, e *engine, rc recipe, name string, oldOpts, otherOpts clientOpts, prepare func(*actor)) *recipeScene {
	t.Helper()
	sc := &recipeScene{run: run, st: newStage(t, run, rc), got: make(chan grantResult, 1)}
	sc.old = newActor(t, run, e, rc, "old", name, oldOpts)
	if prepare != nil {
		prepare(sc.old)
	}
	var err error
	if sc.og, err = sc.old.take(ctx); err != nil {
		t.Fatalf("old holder's acquire = %v", err)
	}
	if ferr, uerr := sc.st.begin(ctx, run.Rec, sc.old.id, sc.og); ferr != nil || uerr != nil {
		t.Fatalf("old holder's enter = %v, %v", ferr, uerr)
	}
	if ferr, uerr := sc.st.work(ctx, run.Rec, sc.old.id, sc.og); ferr != nil || uerr != nil {
		t.Fatalf("old holder's work = %v, %v", ferr, uerr)
	}
	queued := 1
	if rc.name == "sem" {
		sc.peer = newActor(t, run, e, rc, "peer", name, otherOpts)
		if sc.pg, err = sc.peer.take(ctx); err != nil {
			t.Fatalf("peer's acquire = %v", err)
		}
		if ferr, uerr := sc.st.begin(ctx, run.Rec, sc.peer.id, sc.pg); ferr != nil || uerr != nil {
			t.Fatalf("peer's enter = %v, %v", ferr, uerr)
		}
		if ferr, uerr := sc.st.work(ctx, run.Rec, sc.peer.id, sc.pg); ferr != nil || uerr != nil {
			t.Fatalf("peer's work = %v, %v", ferr, uerr)
		}
		queued = 2
	}
	if sc.commit, err = sc.st.decide(ctx, run.Rec, sc.old.id, sc.og); err != nil {
		t.Fatalf("old holder's read = %v", err)
	}
	sc.next = newActor(t, run, e, rc, "new", name, otherOpts)
	go func() { // owner: the test, which receives on got (buffered)
		g, err := sc.next.take(ctx)
		sc.got <- grantResult{g, err, drill.Now()}
	}()
	waitQueue(t, sc.next, queued+1)
	return sc
}

// nextWorks has the new holder enter, work twice, leave and release.
func (sc *recipeScene) nextWorks(t *testing.T, ctx context.Context, g role) {
	t.Helper()
	if ferr, uerr := sc.st.begin(ctx, sc.run.Rec, sc.next.id, g); ferr != nil || uerr != nil {
		t.Errorf("new holder's enter = %v, %v", ferr, uerr)
	}
	for range 2 {
		if ferr, uerr := sc.st.work(ctx, sc.run.Rec, sc.next.id, g); ferr != nil || uerr != nil {
			t.Errorf("new holder's work = %v, %v; want accepted", ferr, uerr)
		}
	}
	sc.st.end(ctx, sc.run.Rec, sc.next.id, g)
	if err := sc.next.release(ctx, g); err != nil {
		t.Errorf("new holder's release = %v", err)
	}
}

// peerFinishes has the semaphore's peer work once more (its occupancy
// spans the whole drill), leave and release.
func (sc *recipeScene) peerFinishes(t *testing.T, ctx context.Context) {
	t.Helper()
	if sc.peer == nil {
		return
	}
	if ferr, uerr := sc.st.work(ctx, sc.run.Rec, sc.peer.id, sc.pg); ferr != nil || uerr != nil {
		t.Errorf("peer's work = %v, %v; want accepted", ferr, uerr)
	}
	sc.st.end(ctx, sc.run.Rec, sc.peer.id, sc.pg)
	if err := sc.peer.release(ctx, sc.pg); err != nil {
		t.Errorf("peer's release = %v", err)
	}
}

// awaitNext waits up to d for next's grant.
func (sc *recipeScene) awaitNext(t *testing.T, d time.Duration, what string) grantResult {
	t.Helper()
	select {
	case r := <-sc.got:
		if r.err != nil {
			t.Fatalf("waiter's acquire = %v, want a grant %s", r.err, what)
		}
		return r
	case <-time.After(d):
		t.Fatalf("waiter not granted within %v %s", d, what)
	}
	return grantResult{}
}

// awaitState waits up to d for l to reach one of want and returns the
// state it has then.
func awaitState(l *baton.Lease, d time.Duration, want ...baton.State) baton.State {
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		st, ch := l.Observe()
		for _, w := range want {
			if st == w {
				return st
			}
		}
		select {
		case <-ch:
		case <-timer.C:
			return st
		}
	}
}

// neverHolds checks that the old holder, after the heal, does not believe
// it holds: its lease stays Lost, and a leader refuses work.
func neverHolds(t *testing.T, g role, who string) {
	t.Helper()
	if st := g.lease.State(); st != baton.Lost {
		t.Errorf("%s's lease is %v after the heal, want lost (a holder whose session ended never holds again)", who, st)
	}
	if g.leader != nil {
		if g.leader.Accepting() {
			t.Errorf("%s: deposed leader still Accepting() after the heal", who)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		if err := g.leader.Admit(ctx); !errors.Is(err, baton.ErrLost) {
			t.Errorf("%s: deposed leader's Admit = %v, want ErrLost", who, err)
		}
	}
}

// stateEvent returns the first state event of client with detail, if any.
func stateEvent(events []drill.Event, client, detail string) (drill.Event, bool) {
	for _, ev := range events {
		if ev.Client == client && ev.Op == drill.OpState && ev.Detail == detail {
			return ev, true
		}
	}
	return drill.Event{}, false
}

func partition(t *testing.T, e *engine, rc recipe, seed uint64, kind string) {
	run := drilltest.Start(t, seed)
	name := recipeName("row04"+kind, e, rc, seed)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sc := setScene(t, ctx, run, e, rc, name, clientOpts{proxied: true}, clientOpts{}, nil)
	proxy := sc.old.lc.proxy
	bound := e.ttl + max(500*time.Millisecond, e.ttl/4)

	switch kind {
	case "short":
		d := time.Duration(float64(e.ttl) * (0.2 + 0.3*run.Rand.Float64()))
		heal := run.Rec.Fault("old", fmt.Sprintf("partition both ways for %v", d))
		if err := proxy.Latency("", partitionHold, 0); err != nil {
			t.Fatal(err)
		}
		time.Sleep(d)
		proxy.Heal()
		heal()
		st := awaitState(sc.og.lease, e.ttl, baton.Held, baton.Lost)
		// The server may still expire what the partition cost; give the
		// verdict time to come in before judging it.
		time.Sleep(e.ttl / 2)
		st = sc.og.lease.State()
		t.Logf("partition of %v: old holder's lease is %v after the heal", d, st)
		switch st {
		case baton.Held:
			select {
			case r := <-sc.got:
				t.Fatalf("waiter's acquire returned (%v, err %v) while the old holder still holds after a short partition: a silent loss (I4)", r.g.lease, r.err)
			default:
			}
			ferr, uerr := sc.commit(ctx)
			if ferr != nil || uerr != nil {
				t.Errorf("old holder's commit after a short partition = %v, %v; want accepted (it still holds)", ferr, uerr)
			}
			sc.st.end(ctx, run.Rec, sc.old.id, sc.og)
			if err := sc.old.release(ctx, sc.og); err != nil {
				t.Errorf("old holder's release = %v", err)
			}
		case baton.Lost:
			if _, ok := stateEvent(run.Rec.Events(), "old", "lost"); !ok {
				t.Errorf("old holder's lease is lost but no lost state was reported (I4)")
			}
			t.Logf("short partition cost the session (%v): reported Lost", sc.og.lease.Err())
			sc.st.end(ctx, run.Rec, sc.old.id, sc.og)
		default:
			t.Fatalf("old holder's lease is %v %v after the heal, want held or lost", st, e.ttl+e.ttl/2)
		}
		r := sc.awaitNext(t, 2*e.ttl, "after the old holder let go")
		sc.nextWorks(t, ctx, r.g)
		sc.peerFinishes(t, ctx)
		sc.st.check(t, run, false)

	case "long", "oneway":
		dir, what := faultproxy.Direction(""), "partition both ways"
		if kind == "oneway" {
			// The server keeps hearing the holder; only the answers are held.
			dir, what = faultproxy.Downstream, "partition server→client"
			bound = 2*e.ttl + time.Second
		}
		heal := run.Rec.Fault("old", what)
		faultAt := drill.Now()
		if err := proxy.Latency(dir, partitionHold, 0); err != nil {
			t.Fatal(err)
		}
		r := sc.awaitNext(t, 2*e.ttl+time.Second, "while the old holder is partitioned")
		t.Logf("waiter granted %v after the partition began (bound %v)", time.Duration(r.at-faultAt), bound)
		run.Report(drill.CheckProgress(run.Rec.Events(), sc.next.name, "old", faultAt, bound))
		if r.g.lease.Token() <= sc.og.lease.Token() {
			t.Errorf("new holder's token %d, want > the old holder's %d (I2)", r.g.lease.Token(), sc.og.lease.Token())
		}
		sc.nextWorks(t, ctx, r.g)
		proxy.Heal()
		heal()
		// After the heal the old holder learns nothing that revives it.
		if st := awaitState(sc.og.lease, e.ttl, baton.Lost); st != baton.Lost {
			t.Errorf("old holder's lease is %v a TTL after the heal, want lost", st)
		}
		time.Sleep(200 * time.Millisecond)
		neverHolds(t, sc.og, "old holder")
		// The write the old holder had decided on goes out now, without a
		// look at its lease: the fence must refuse it (I3); the unfenced
		// control takes it and loses the newer work.
		ferr, _ := sc.commit(ctx)
		if !errors.Is(ferr, baton.ErrStaleToken) {
			t.Errorf("old holder's late commit to the fenced resource = %v, want rejected as stale (I3)", ferr)
		}
		neverHolds(t, sc.og, "old holder")
		if err := sc.old.release(ctx, sc.og); err == nil {
			t.Errorf("old holder's Release after losing the role = nil, want an error (it did not hold)")
		}
		sc.peerFinishes(t, ctx)
		sc.st.check(t, run, true)
	}
	events := run.Rec.Events()
	sc.st.checkHolders(run, sc.next.name)
	if rc.permits == 1 {
		run.Report(drill.CheckTokens(events))
	}
	sc.st.orphans(ctx, run, sc.next, 2*e.ttl)
}
