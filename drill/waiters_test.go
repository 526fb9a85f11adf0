package drill_test

import (
	"context"
	"errors"
	"path"
	"strconv"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/drill"
	"github.com/baton-go/baton/drill/drilltest"
	"github.com/baton-go/baton/engine/queuekit/drillhook"
)

// TestRow12WaiterSessionExpires is CURATOR-604 and etcd #19597: a waiter's
// own session expires while it waits (ZooKeeper: its link is blackholed
// past the session timeout; etcd: its lease is revoked). It must return
// baton.ErrSessionLost promptly and never acquire on its dead queue
// position, even when the holder releases meanwhile.
//
// A SQL waiter has no session on the server (it holds no row): its
// variant is waiterBackendKilled, on the SQL servers (SQLite has none,
// and the Redis engines' waiters hold no connection of their own).
func TestRow12WaiterSessionExpires(t *testing.T) {
	forEachQueueEngine(t, func(t *testing.T, e *engine) {
		trials(t, e, 2, waiterSessionExpires)
	})
	runLeaseEngines(t, func(le leaseEngine) bool { return isSQL(le) && !le.embedded },
		func(t *testing.T, e *engine) { trials(t, e, 2, waiterBackendKilled) })
}

func waiterSessionExpires(t *testing.T, e *engine, seed uint64) {
	run := drilltest.Start(t, seed)
	name := lockName("row12", e, seed)
	res := newCounters(t, run)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a := newHolder(t, run, e, "a", name, clientOpts{})
	la, err := a.lock(ctx)
	if err != nil {
		t.Fatalf("A's Lock = %v", err)
	}
	w := newHolder(t, run, e, "w", name, clientOpts{proxied: e.name == "zk"})
	type result struct {
		l   *baton.Lease
		err error
		at  int64
	}
	got := make(chan result, 1)
	go func() { // owner: this test, which receives on got
		l, err := w.lock(ctx)
		got <- result{l, err, drill.Now()}
	}()
	waitEntries(t, e, name, 2)

	var expired int64
	var bound time.Duration
	switch e.name {
	case "zk":
		heal := run.Rec.Fault("w", "blackhole past the session timeout")
		if err := w.lc.proxy.Blackhole(""); err != nil {
			t.Fatal(err)
		}
		expired = drill.Now()
		// The client cannot hear the expiry; it must conclude it from the
		// silence: Lost once the session timeout could have run out.
		bound = e.ttl + 500*time.Millisecond
		time.AfterFunc(e.ttl+e.ttl/2, func() {
			// The holder leaves while the waiter is cut off: a waiter that
			// trusted its old position would now think it is first.
			_ = a.release(ctx, la)
			time.Sleep(200 * time.Millisecond)
			w.lc.proxy.Heal()
			heal()
		})
	case "etcd":
		es, err := e.scan(ctx, name)
		if err != nil || len(es) != 2 {
			t.Fatalf("Entries = %v, %v; want A's and W's", es, err)
		}
		wkey := es[1]
		if wkey == la.Owner() {
			wkey = es[0]
		}
		id, err := strconv.ParseInt(path.Base(wkey), 16, 64)
		if err != nil {
			t.Fatalf("lease of %s: %v", wkey, err)
		}
		cli := rawEtcd(t, etcdServer.Endpoint)
		heal := run.Rec.Fault("w", "lease revoked")
		if _, err := cli.Revoke(ctx, clientv3.LeaseID(id)); err != nil {
			t.Fatalf("Revoke(%x) = %v", id, err)
		}
		expired = drill.Now()
		heal()
		// The next keepalive (every TTL/3) finds the lease gone.
		bound = e.ttl/3 + 500*time.Millisecond
		go func() { _ = a.release(ctx, la) }() // the holder leaves at once
	}
	var r result
	select {
	case r = <-got:
	case <-time.After(3 * e.ttl):
		t.Fatalf("waiter still waiting 3×TTL after its session expired (etcd #19597)")
	}
	if r.err == nil {
		t.Fatalf("waiter acquired (%s, token %d) after its session expired, want ErrSessionLost (CURATOR-604)", r.l.Owner(), r.l.Token())
	}
	if !errors.Is(r.err, baton.ErrSessionLost) {
		t.Errorf("waiter's Lock = %v, want ErrSessionLost", r.err)
	}
	if d := time.Duration(r.at - expired); d > bound {
		t.Errorf("waiter returned %v after its session expired, want ≤ %v", d, bound)
	} else {
		t.Logf("waiter returned %v after its session expired: %v", d, r.err)
	}
	// Nobody is blocked by the dead waiter's entry: a newcomer acquires.
	c := newHolder(t, run, e, "c", name, clientOpts{})
	cctx, ccancel := context.WithTimeout(ctx, 2*e.ttl)
	lc, err := c.lock(cctx)
	ccancel()
	if err != nil {
		t.Fatalf("newcomer's Lock = %v, want the lock free of the dead waiter", err)
	}
	if ferr, uerr := res.increment(ctx, run, c.id, lc.Token(), lc.Owner()); ferr != nil || uerr != nil {
		t.Errorf("newcomer's increment = %v, %v", ferr, uerr)
	}
	if err := c.release(ctx, lc); err != nil {
		t.Errorf("newcomer's Release = %v", err)
	}
	events := run.Rec.Events()
	run.Report(drill.CheckTokens(events))
	run.Report(drill.CheckExclusive(events))
	res.check(t, run, false)
	run.Report(drill.Orphans(ctx, name, 2*e.ttl, e.scan))
}

// TestRow10CancelWaiters is CURATOR-79 (an interrupted acquire left its
// node behind): 20 % of 100 waiters are cancelled at random while the
// queue moves. Each cancelled Lock returns the context's error within
// 250 ms, or a lease if the grant won the race; never an error while
// holding. Cancelled entries vanish; the others are not stalled and are
// granted in queue order.
func TestRow10CancelWaiters(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e *engine) {
		trials(t, e, 2, cancelWaiters)
		if e.family == leaseFamily {
			// No hook between a lease engine's grant and its return: the
			// cancel races the release that lets the racer in.
			t.Run("grant-races-cancel", func(t *testing.T) { trials(t, e, 3, cancelAtRelease) })
			return
		}
		t.Run("grant-races-cancel", func(t *testing.T) { trials(t, e, 2, cancelAtGrant) })
	})
}

const cancelSlack = 250 * time.Millisecond

func cancelWaiters(t *testing.T, e *engine, seed uint64) {
	const n, cancelled = 100, 20
	run := drilltest.Start(t, seed)
	name := lockName("row10", e, seed)
	res := newCounters(t, run)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }() // a failed trial stops its waiters
	plug := newHolder(t, run, e, "plug", name, clientOpts{})
	lp, err := plug.lock(ctx)
	if err != nil {
		t.Fatalf("plug's Lock = %v", err)
	}
	var shared clientOpts
	switch {
	case e.name == "etcd":
		shared.etcdCli = rawEtcd(t, etcdServer.Endpoint) // one connection, a lease per waiter
	case e.family == leaseFamily:
		shared.share = e.open(t, clientOpts{pool: 24}) // one pool for every waiter
	}
	ws := make([]*holder, n)
	for i := range ws {
		ws[i] = newHolder(t, run, e, "w"+strconv.Itoa(i), name, shared)
	}
	type outcome struct {
		err      error
		returned time.Time
	}
	outs := make([]outcome, n)
	cancels := make([]context.CancelFunc, n)
	for i, w := range ws {
		wctx, wcancel := context.WithCancel(ctx)
		cancels[i] = wcancel
		wg.Go(func() { // owner: this test (wg)
			defer wcancel()
			l, err := w.lock(wctx)
			outs[i] = outcome{err, time.Now()}
			if err != nil {
				return
			}
			if ferr, uerr := res.increment(ctx, run, w.id, l.Token(), l.Owner()); ferr != nil || uerr != nil {
				t.Errorf("%s's increment = %v, %v", w.id, ferr, uerr)
			}
			if err := w.release(ctx, l); err != nil {
				t.Errorf("%s's Release = %v", w.id, err)
			}
		})
	}
	waitEntries(t, e, name, n+1)
	victims := run.Rand.Perm(n)[:cancelled]
	cancelAt := make([]time.Time, n)
	var cwg sync.WaitGroup
	start := time.Now()
	for _, v := range victims {
		at := time.Duration(run.Rand.IntN(400)) * time.Millisecond
		cwg.Go(func() {
			time.Sleep(at - time.Since(start))
			cancelAt[v] = time.Now()
			run.Rec.Info(ws[v].id, "cancel", name, "")
			cancels[v]()
		})
	}
	_ = plug.release(ctx, lp)
	cwg.Wait()
	wg.Wait()

	isVictim := map[int]bool{}
	for _, v := range victims {
		isVictim[v] = true
		o := outs[v]
		switch {
		case o.err == nil:
			t.Logf("%s: the grant won the race with the cancel", ws[v].id)
		case !errors.Is(o.err, context.Canceled):
			t.Errorf("%s's Lock = %v, want context.Canceled", ws[v].id, o.err)
		case o.returned.Sub(cancelAt[v]) > cancelSlack:
			t.Errorf("%s's Lock returned %v after its cancel, want ≤ %v", ws[v].id, o.returned.Sub(cancelAt[v]), cancelSlack)
		}
	}
	for i, o := range outs {
		if !isVictim[i] && o.err != nil {
			t.Errorf("%s (not cancelled) Lock = %v, want a grant (others must not be stalled)", ws[i].id, o.err)
		}
	}
	events := run.Rec.Events()
	run.Report(drill.CheckExclusive(events))
	run.Report(drill.CheckTokens(events))
	if e.order != nil {
		run.Report(drill.CheckFIFO(events))
	}
	res.check(t, run, false)
	// The session's cleanup removed every cancelled entry, at once: the
	// server was reachable throughout.
	wait := time.Second
	run.Report(drill.Orphans(ctx, name, wait, e.scan))
}

// cancelAtGrant: the acquire context is cancelled in the window between
// the grant and Lock's return (the BeforeReturn hook). Lock returns the
// error and gives the grant back: the next waiter gets it.
func cancelAtGrant(t *testing.T, e *engine, seed uint64) {
	run := drilltest.Start(t, seed)
	name := lockName("row10r", e, seed)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	plug := newHolder(t, run, e, "plug", name, clientOpts{})
	lp, err := plug.lock(ctx)
	if err != nil {
		t.Fatalf("plug's Lock = %v", err)
	}
	wctx, wcancel := context.WithCancel(ctx)
	defer wcancel()
	hooks := &drillhook.Hooks{BeforeReturn: func() {
		run.Rec.Info("racer", "cancel", name, "at BeforeReturn")
		wcancel()
	}}
	racer := newHolder(t, run, e, "racer", name, clientOpts{hooks: hooks})
	next := newHolder(t, run, e, "next", name, clientOpts{})
	rerr := make(chan error, 1)
	go func() { // owner: this test, which receives on rerr
		l, err := racer.lock(wctx)
		if err == nil {
			_ = racer.release(ctx, l)
		}
		rerr <- err
	}()
	waitEntries(t, e, name, 2)
	nl := make(chan *baton.Lease, 1)
	go func() {
		l, err := next.lock(ctx)
		if err != nil {
			t.Errorf("next's Lock = %v", err)
		}
		nl <- l
	}()
	waitEntries(t, e, name, 3)
	_ = plug.release(ctx, lp)
	if err := <-rerr; !errors.Is(err, context.Canceled) {
		t.Errorf("racer's Lock (cancelled at BeforeReturn) = %v, want context.Canceled", err)
	}
	select {
	case l := <-nl:
		if l != nil {
			_ = next.release(ctx, l)
		}
	case <-time.After(e.ttl):
		t.Fatalf("next waiter not granted within TTL: the cancelled racer's grant leaked")
	}
	run.Report(drill.CheckExclusive(run.Rec.Events()))
	run.Report(drill.Orphans(ctx, name, time.Second, e.scan))
}
