package drill_test

import (
	"context"
	"errors"
	"path"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"go.uber.org/goleak"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/batontest/testenv"
	"github.com/baton-go/baton/drill"
	"github.com/baton-go/baton/drill/drilltest"
	"github.com/baton-go/baton/engine/queuekit/drillhook"
	"github.com/baton-go/baton/faultproxy"
	"github.com/baton-go/baton/zklock"
)

// trials runs f for drilltest.Trials(def) seeded trials of one engine.
func trials(t *testing.T, e *engine, def int, f func(t *testing.T, e *engine, seed uint64)) {
	base := drilltest.BaseSeed()
	for i := range drilltest.Trials(def) {
		seed := base + uint64(i)
		t.Run("", func(t *testing.T) { f(t, e, seed) })
	}
}

// TestRow01CreateResponseLost: the create of A's queue entry is applied
// but its response is lost (Curator's protected-mode test; Jepsen jetcd
// 0.8.2, whose transport retried a non-idempotent
// create). Exactly one of {acquired with a fresh token, cleanly not
// acquired}; ZooKeeper adopts its _c_<uuid> node or deletes it; no orphan
// blocks B beyond the handoff; never two holders.
//
// On SQL the acquire is one statement (PostgreSQL) or a short transaction
// (MySQL): the cut lets through every byte of the answer but the last, so
// the statement or COMMIT is applied and its answer never arrives; the
// attempt's unknown outcome must be abandoned (an owner-checked release in
// the background), not left to block B for a TTL.
func TestRow01CreateResponseLost(t *testing.T) {
	forEachNetworkEngine(t, func(t *testing.T, e *engine) {
		trials(t, e, 3, createResponseLost)
	})
}

func createResponseLost(t *testing.T, e *engine, seed uint64) {
	run := drilltest.Start(t, seed)
	name := lockName("row01", e, seed)
	res := newCounters(t, run)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a := newHolder(t, run, e, "a", name, clientOpts{proxied: true, pool: 1}) // pool: see cutLastByte
	b := newHolder(t, run, e, "b", name, clientOpts{})
	healAfter := time.Duration(50+run.Rand.IntN(500)) * time.Millisecond
	bFirst := run.Rand.IntN(2) == 0
	t.Logf("heal after %v, B enqueued first: %v", healAfter, bFirst)

	var wg sync.WaitGroup
	defer wg.Wait()
	bDone := make(chan error, 1)
	startB := func() {
		wg.Go(func() { // owner: this test (wg)
			l, err := b.lock(ctx)
			if err == nil {
				if ferr, uerr := res.increment(ctx, run, b.id, l.Token(), l.Owner()); ferr != nil || uerr != nil {
					err = errors.Join(ferr, uerr)
				}
				if rerr := b.release(ctx, l); err == nil {
					err = rerr
				}
			}
			bDone <- err
		})
	}
	if bFirst {
		startB()
		// B may take the free lock and finish before a scan sees its
		// entry: either is "B enqueued first".
		waitEntriesOr(t, e, name, 1, func() bool { return len(bDone) > 0 })
	}

	heal := run.Rec.Fault("a", "limit_data downstream (create response lost)")
	cut := a.lc.cutResponse
	if cut == nil {
		cut = func(*testing.T) error { return a.lc.proxy.CutAfter(faultproxy.Downstream, 0) }
	}
	if err := cut(t); err != nil {
		t.Fatal(err)
	}
	healTimer := time.AfterFunc(healAfter, func() { a.lc.proxy.Heal(); heal() })
	defer healTimer.Stop()
	if !bFirst {
		wg.Go(func() { // B queues while A's create is in doubt
			time.Sleep(healAfter / 2)
			startB()
		})
	}
	actx, acancel := context.WithTimeout(ctx, 3*e.ttl)
	la, aerr := a.lock(actx)
	acancel()
	aReturned := drill.Now()
	if aerr == nil {
		// Acquired: with exactly one entry of its own (no duplicate from a
		// blind re-create).
		es, err := e.scan(ctx, name)
		if err != nil {
			t.Fatalf("Entries = %v", err)
		}
		if n := ownEntries(e, es, la.Owner()); n != 1 {
			t.Errorf("A holds %s but the queue %v has %d of its entries, want 1", la.Owner(), es, n)
		}
		if ferr, uerr := res.increment(ctx, run, a.id, la.Token(), la.Owner()); ferr != nil || uerr != nil {
			t.Errorf("A's increment = %v, %v; want nil", ferr, uerr)
		}
		if err := a.release(ctx, la); err != nil {
			t.Errorf("A's Release = %v, want nil", err)
		}
	} else {
		t.Logf("A not acquired: %v", aerr)
		if errors.Is(aerr, baton.ErrLost) {
			t.Errorf("A's Lock = %v; a failed acquire must not report a lost lease", aerr)
		}
	}
	healTimer.Stop()
	a.lc.proxy.Heal()
	heal()
	wg.Wait()
	select {
	case err := <-bDone:
		if err != nil {
			t.Errorf("B = %v, want acquired, incremented and released", err)
		}
	default:
		t.Errorf("B did not finish")
	}
	events := run.Rec.Events()
	// No orphan of A blocks B beyond the handoff: B is granted within TTL
	// plus the I5 margin of the moment A stopped holding or trying.
	freed := aReturned
	for _, ev := range events {
		if ev.Client == "a" && ev.Op == drill.OpRelease && ev.Phase == drill.Ok {
			freed = ev.T
		}
	}
	bound := e.ttl + max(500*time.Millisecond, e.ttl/4)
	for _, g := range drill.Grants(events, name) {
		if g.Client == "b" && g.At > freed+int64(bound) {
			t.Errorf("B granted %v after A freed the lock, want ≤ %v (an orphan of A blocked it)", time.Duration(g.At-freed), bound)
		}
	}
	run.Report(drill.CheckExclusive(events))
	run.Report(drill.CheckTokens(events))
	res.check(t, run, false)
	run.Report(drill.Orphans(ctx, name, 2*e.ttl, e.scan))
}

// ownEntries counts the entries of es that belong to the same acquire as
// owner: ZooKeeper's protected prefix _c_<uuid>-, etcd's lease key.
func ownEntries(e *engine, es []string, owner string) int {
	if e.family == leaseFamily {
		n := 0
		for _, x := range es {
			if e.owns(x, owner) {
				n++
			}
		}
		return n
	}
	base := path.Base(owner)
	if i := strings.LastIndexByte(base, '@'); i > 0 {
		base = base[:i] // etcd owners are key@create-revision
	}
	prefix := base
	if i := strings.Index(base, "-lock-"); e.name == "zk" && i > 0 {
		prefix = base[:i+1]
	}
	n := 0
	for _, x := range es {
		if strings.HasPrefix(path.Base(x), prefix) {
			n++
		}
	}
	return n
}

// TestRow11ReleaseResponseLost: A's release is applied but its reply is
// lost; B is granted; A retries the release. The retry must be a no-op
// (I9): etcd #22082 (a retried unlock deleted the newer holder's key).
//
// The unanswered release ends A's lease at once (Lost: Release failed,
// its outcome unknown) and the engine goes on removing A's entry in the
// background, owner-checked. So B is granted within a TTL even when the
// release was not applied (a PostgreSQL release cut by its deadline is
// cancelled on the server), the retry returns the loss without a round
// trip, and the background removal must not touch B's entry either.
func TestRow11ReleaseResponseLost(t *testing.T) {
	forEachNetworkEngine(t, func(t *testing.T, e *engine) {
		trials(t, e, 2, releaseResponseLost)
	})
}

func releaseResponseLost(t *testing.T, e *engine, seed uint64) {
	run := drilltest.Start(t, seed)
	name := lockName("row11", e, seed)
	res := newCounters(t, run)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// pool: a SQL client's release goes over the connection its warm-up
	// prepared the statement on, so the request is one message.
	a := newHolder(t, run, e, "a", name, clientOpts{proxied: true, pool: 1})
	b := newHolder(t, run, e, "b", name, clientOpts{})
	la, err := a.lock(ctx)
	if err != nil {
		t.Fatalf("A's Lock = %v", err)
	}
	if ferr, uerr := res.increment(ctx, run, a.id, la.Token(), la.Owner()); ferr != nil || uerr != nil {
		t.Fatalf("A's increment = %v, %v", ferr, uerr)
	}
	bl := make(chan *baton.Lease, 1)
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() {
		l, err := b.lock(ctx)
		if err != nil {
			t.Errorf("B's Lock = %v", err)
		}
		bl <- l
	})
	waitEntries(t, e, name, 2)

	// Drop the release's reply: every server→client byte is swallowed
	// while the request itself goes through and is applied. (limit_data 0
	// would cut the link at the next server→client byte, which on a busy
	// gRPC connection can be a ping answer before the delete is even sent.)
	heal := run.Rec.Fault("a", "blackhole downstream (release reply lost)")
	if err := a.lc.proxy.Blackhole(faultproxy.Downstream); err != nil {
		t.Fatal(err)
	}
	rctx, rcancel := context.WithTimeout(ctx, 300*time.Millisecond)
	err = a.release(rctx, la)
	rcancel()
	if err == nil {
		t.Fatalf("A's Release through a link that drops every reply = nil; the drill did not lose the reply")
	}
	if st := la.State(); st != baton.Lost {
		t.Errorf("A's lease is %v after its failed Release, want lost before anyone else can be granted", st)
	}
	// The connection that lost bytes is broken for good: cut it, then heal.
	a.lc.proxy.Refuse()
	a.lc.proxy.Heal()
	if err := a.lc.proxy.Accept(); err != nil {
		t.Fatal(err)
	}
	heal()
	var lb *baton.Lease
	select {
	case lb = <-bl:
	case <-time.After(e.ttl):
		t.Fatalf("B not granted within TTL of A's failed release")
	}
	if lb == nil {
		t.FailNow()
	}
	// A caller's retry of the old release, after the newer grant: the
	// lease has ended, so it is answered with the loss, on no round trip.
	rerr := a.release(ctx, la)
	t.Logf("A's first release: %v; retried release: %v", err, rerr)
	if !errors.Is(rerr, baton.ErrLost) {
		t.Errorf("retried Release = %v, want the loss its failed release ended the lease with", rerr)
	}
	time.Sleep(200 * time.Millisecond) // let a wrongful delete's watch events land
	es, err := e.scan(ctx, name)
	if err != nil {
		t.Fatalf("Entries = %v", err)
	}
	if ownEntries(e, es, lb.Owner()) != 1 {
		t.Errorf("after A's release and its background retries the queue is %v; B's entry %s is gone (I9, etcd #22082)", es, lb.Owner())
	}
	if st := lb.State(); st != baton.Held {
		t.Errorf("B's lease is %v after A's retried release, want held (I9)", st)
	}
	if ferr, uerr := res.increment(ctx, run, b.id, lb.Token(), lb.Owner()); ferr != nil || uerr != nil {
		t.Errorf("B's increment = %v, %v; want nil", ferr, uerr)
	}
	if err := b.release(ctx, lb); err != nil {
		t.Errorf("B's Release = %v", err)
	}
	events := run.Rec.Events()
	run.Report(drill.CheckTokens(events))
	res.check(t, run, false)
	run.Report(drill.Orphans(ctx, name, 2*e.ttl, e.scan))
}

// TestRow13Unreachable: the server is unreachable when Lock is called —
// connections refused, or a blackhole. Lock returns by its deadline +
// 250 ms with the context's error (etcd #18082: Lock hung with the servers
// down), and nothing the call started outlives the client (I6).
func TestRow13Unreachable(t *testing.T) {
	forEachNetworkEngine(t, func(t *testing.T, e *engine) {
		for _, fault := range []string{"refuse", "blackhole"} {
			t.Run(fault, func(t *testing.T) {
				trials(t, e, 1, func(t *testing.T, e *engine, seed uint64) { unreachable(t, e, seed, fault) })
			})
		}
		if e.name == "zk" {
			t.Run("dial-refused", func(t *testing.T) { dialRefused(t) })
		}
	})
}

const deadlineSlack = 250 * time.Millisecond

func unreachable(t *testing.T, e *engine, seed uint64, fault string) {
	run := drilltest.Start(t, seed)
	name := lockName("row13", e, seed)
	time.Sleep(200 * time.Millisecond) // the engine's scan client has settled
	baseline := batonGoroutines()
	a := newHolder(t, run, e, "a", name, clientOpts{proxied: true})
	before := batonGoroutines()
	heal := run.Rec.Fault("a", fault)
	switch fault {
	case "refuse":
		a.lc.proxy.Refuse()
		// The call is to find the server down: let the client see its
		// connection cut first (go-zookeeper reads the EOF on its own
		// goroutine; under load that took longer than a short deadline).
		if a.lc.zk != nil {
			for wait := time.Now().Add(2 * time.Second); time.Now().Before(wait); time.Sleep(5 * time.Millisecond) {
				if c := a.lc.zk.Conn(); c == nil || c.State() != zk.StateHasSession {
					break
				}
			}
		}
	case "blackhole":
		if err := a.lc.proxy.Blackhole(""); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Duration(300+run.Rand.IntN(700)) * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	start := time.Now()
	l, err := a.lock(ctx)
	took := time.Since(start)
	cancel()
	if err == nil {
		t.Fatalf("Lock with the server unreachable = %v, nil; want an error", l.Owner())
	}
	if took > deadline+deadlineSlack {
		t.Errorf("Lock returned after %v, want ≤ deadline %v + %v (I6)", took, deadline, deadlineSlack)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Lock = %v, want an error wrapping context.DeadlineExceeded", err)
	}
	// Where the engine can know the server is unreachable it says so: a
	// refused ZooKeeper connection, an etcd lease that could not be granted.
	// (A SQL waiter retries through refused connections until its deadline
	// and reports the deadline, with the last attempt's error as text.)
	if wantUnavail := e.name == "etcd" || (fault == "refuse" && e.family == queueFamily); wantUnavail && !errors.Is(err, baton.ErrUnavailable) {
		t.Errorf("Lock = %v, want it to wrap baton.ErrUnavailable", err)
	}
	t.Logf("Lock returned after %v (deadline %v): %v", took, deadline, err)
	switch fault {
	case "refuse":
		if err := a.lc.proxy.Accept(); err != nil {
			t.Fatal(err)
		}
	default:
		a.lc.proxy.Heal()
	}
	heal()
	// Nothing keeps working on the returned call's behalf: once the server
	// is back and the client has settled (its session may have been
	// replaced meanwhile, which is the client's business), baton runs as
	// many goroutines as before the call.
	settle := time.Now().Add(3 * e.ttl)
	for n := batonGoroutines(); n > before; n = batonGoroutines() {
		if time.Now().After(settle) {
			t.Errorf("baton goroutines: %d before Lock, %d after it returned and the server came back: something keeps working for a returned call\n%s", before, n, batonStacks())
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := a.lc.close(); err != nil {
		t.Errorf("Close = %v", err)
	}
	a.lc.proxy.Close()
	a.wg.Wait()
	// Every goroutine of baton's engines ends with the client (I6). (The
	// embedded etcd server's own connection goroutines end on their own
	// time; TestMain checks the whole process with goleak at the end.)
	settle = time.Now().Add(3 * time.Second)
	for n := batonGoroutines(); n > baseline; n = batonGoroutines() {
		if time.Now().After(settle) {
			t.Errorf("baton goroutines: %d before the client, %d after its Close\n%s", baseline, n, batonStacks())
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The engine's cleanup removed the abandoned entry, if any was made.
	octx, ocancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer ocancel()
	run.Report(drill.Orphans(octx, name, 2*e.ttl, e.scan))
}

// batonPackages are the stack prefixes of baton's engine code.
var batonPackages = []string{"baton-go/baton/zklock.", "baton-go/baton/etcdlock.", "baton-go/baton/queue.",
	"baton-go/baton/sqllock.", "baton-go/baton/redislock.", "baton-go/baton/redlock.", "baton-go/baton/keeper.",
	"github.com/baton-go/baton.("}

// batonGoroutines counts the goroutines running baton's engine code (not
// the drill's, not the client libraries').
func batonGoroutines() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	count := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "zklock.(*trackedConn).Read") {
			// go-zookeeper's receive loop on the session's connection: it
			// belongs to the connection, which may be replaced on its own
			// time after an outage, not to any call (Close's check below
			// covers it).
			continue
		}
		for _, pkg := range batonPackages {
			if strings.Contains(g, pkg) {
				count++
				break
			}
		}
	}
	return count
}

// batonStacks returns the stacks batonGoroutines counts.
func batonStacks() string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		for _, pkg := range batonPackages {
			if strings.Contains(g, pkg) {
				out = append(out, g)
				break
			}
		}
	}
	return strings.Join(out, "\n\n")
}

// dialRefused: zklock.Dial against a refusing server returns by its
// deadline with ErrUnavailable and leaves nothing running.
func dialRefused(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	p, err := faultproxy.Start(testenv.ZK(t))
	if err != nil {
		t.Fatal(err)
	}
	p.Refuse()
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	start := time.Now()
	c, err := zklock.Dial(ctx, []string{p.Addr}, zklock.Options{SessionTimeout: zkTimeout})
	took := time.Since(start)
	if err == nil {
		c.Close()
		t.Fatal("Dial to a refusing server = nil error")
	}
	if took > 500*time.Millisecond+deadlineSlack || !errors.Is(err, baton.ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Dial = %v after %v, want ErrUnavailable and DeadlineExceeded by 750ms", err, took)
	}
	p.Close()
	if err := goleak.Find(ignore); err != nil {
		t.Errorf("after a failed Dial: %v", err)
	}
}

// TestRow15PredecessorGoneBeforeWatch is CURATOR-527: the predecessor is
// deleted between the waiter's read of the queue and its watch
// registration. The watch must report it gone at once so the waiter
// re-reads and acquires, instead of waiting forever.
func TestRow15PredecessorGoneBeforeWatch(t *testing.T) {
	forEachQueueEngine(t, func(t *testing.T, e *engine) { trials(t, e, 2, predecessorGone) })
}

func predecessorGone(t *testing.T, e *engine, seed uint64) {
	run := drilltest.Start(t, seed)
	name := lockName("row15", e, seed)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a := newHolder(t, run, e, "a", name, clientOpts{})
	la, err := a.lock(ctx)
	if err != nil {
		t.Fatalf("A's Lock = %v", err)
	}
	var deletedAt int64
	var once sync.Once
	hooks := &drillhook.Hooks{}
	hooks.BeforeWatch = func(blocker string) {
		run.Rec.Record(drill.Event{Client: "b", Op: drill.OpWatch, Phase: drill.Info, Name: name, Entry: blocker})
		once.Do(func() {
			heal := run.Rec.Fault("a", "predecessor deleted between read and watch")
			if err := e.del(ctx, blocker); err != nil {
				t.Errorf("deleting %s = %v", blocker, err)
			}
			deletedAt = drill.Now()
			heal()
		})
	}
	b := newHolder(t, run, e, "b", name, clientOpts{hooks: hooks})
	lctx, lcancel := context.WithTimeout(ctx, 2*e.ttl)
	lb, err := b.lock(lctx)
	lcancel()
	if err != nil {
		t.Fatalf("B's Lock = %v; want the grant once its predecessor was gone (CURATOR-527)", err)
	}
	if deletedAt == 0 {
		t.Fatal("B was granted without ever watching: the hook never ran")
	}
	if d := time.Duration(drill.Now() - deletedAt); d > 500*time.Millisecond {
		t.Errorf("B granted %v after its predecessor was deleted, want at once (≤ 500ms)", d)
	}
	if lb.Token() <= la.Token() {
		t.Errorf("B's token %d, want > A's %d (I2)", lb.Token(), la.Token())
	}
	if err := b.release(ctx, lb); err != nil {
		t.Errorf("B's Release = %v", err)
	}
	_ = a.release(ctx, la) // its entry was deleted behind its back: lost or a no-op
	run.Report(drill.Orphans(ctx, name, 2*e.ttl, e.scan))
}
