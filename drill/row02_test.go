package drill_test

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/baton-go/baton/drill"
	"github.com/baton-go/baton/drill/drilltest"
)

// TestRow02PausedHolder is Jepsen's etcd 3.4.3 lock test: the holder, in a child process, is frozen with SIGSTOP
// for 3×TTL after it has read the counter. Its session expires; the next
// waiter is granted (I5) with a larger token (I2). The holder resumes and
// sends the write it had decided on: the fenced resource rejects it (I3);
// the unfenced twin accepts it and loses the newer increments — the
// negative control must go red. The holder learns Lost right after it
// resumes (I4).
func TestRow02PausedHolder(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e *engine) {
		// Each trial freezes the holder for 3×TTL. The Redis engines hold
		// their leases with the keeper as SQL does, so one trial each by
		// default keeps CI time down; BATON_DRILL_TRIALS runs more.
		def := 2
		if e.name == "redis" || e.name == "redlock" {
			def = 1
		}
		base := drilltest.BaseSeed()
		for i := range drilltest.Trials(def) {
			seed := base + uint64(i)
			t.Run("", func(t *testing.T) { pausedHolder(t, e, seed) })
		}
	})
}

func pausedHolder(t *testing.T, e *engine, seed uint64) {
	run := drilltest.Start(t, seed)
	name := lockName("row02", e, seed)
	// On SQL the resource and its fence live in the locks' own database.
	res := newCountersFor(t, run, e)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	ch := startHolder(t, run, e, "old", name, res)
	acq := ch.await(t, 20*time.Second, "acquire", func(ev drill.Event) bool { return ev.Op == drill.OpAcquire && ev.Phase != drill.Invoke })
	if acq.Phase != drill.Ok {
		t.Fatalf("holder's Lock = %s %s, want ok", acq.Phase, acq.Detail)
	}
	ch.await(t, 20*time.Second, "ready", func(ev drill.Event) bool { return ev.Op == "ready" })

	// The waiter queues behind the holder before the pause.
	w := newHolder(t, run, e, "new", name, clientOpts{})
	type result struct {
		err error
		at  time.Time
	}
	got := make(chan result, 1)
	var leaseTok uint64
	var leaseOwner string
	go func() { // owner: this test; it receives on got
		l, err := w.lock(ctx)
		if err == nil {
			leaseTok, leaseOwner = l.Token(), l.Owner()
			defer w.release(context.Background(), l)
			for range 3 {
				if ferr, uerr := res.increment(ctx, run, w.id, l.Token(), l.Owner()); ferr != nil || uerr != nil {
					t.Errorf("new holder's increment = %v, %v; want nil", ferr, uerr)
				}
			}
		}
		got <- result{err, time.Now()}
	}()
	// Let the waiter enqueue and watch before freezing the holder.
	waitEntries(t, e, name, 2)

	heal := run.Rec.Fault("old", "sigstop")
	stopAt := drill.Now()
	ch.signal(t, syscall.SIGSTOP)
	var r result
	select {
	case r = <-got:
	case <-time.After(3 * e.ttl):
		t.Fatalf("waiter not granted within 3×TTL of the holder's pause (I5)")
	}
	if r.err != nil {
		t.Fatalf("waiter's Lock = %v, want a grant after the paused holder's expiry", r.err)
	}
	if rest := time.Until(time.Now().Add(3*e.ttl - time.Duration(drill.Now()-stopAt))); rest > 0 {
		time.Sleep(rest)
	}
	// The write the frozen process had decided on is queued before it
	// resumes: it is the first thing it does.
	if _, err := ch.stdin.Write([]byte("go\n")); err != nil {
		t.Fatal(err)
	}
	resumeAt := drill.Now()
	ch.signal(t, syscall.SIGCONT)
	heal()

	fw := ch.await(t, 20*time.Second, "fenced write", func(ev drill.Event) bool {
		return ev.Op == drill.OpWrite && ev.Name == res.fName && ev.Phase != drill.Invoke && ev.T > resumeAt
	})
	if fw.Phase != drill.Fail || fw.Detail != drill.StaleDetail {
		t.Errorf("old holder's post-resume fenced write = %s %q, want rejected as stale (I3)", fw.Phase, fw.Detail)
	}
	lost := ch.await(t, 20*time.Second, "lost", func(ev drill.Event) bool { return ev.Op == drill.OpState && ev.Detail == "lost" })
	if lost.T < resumeAt {
		t.Errorf("old holder reported Lost while frozen (at %d, resumed at %d)?", lost.T, resumeAt)
	}
	// "Within 1 RTT of resuming": the engine may not wait for the server;
	// 1 s leaves room for a loaded CI machine under -race.
	if d := time.Duration(lost.T - resumeAt); d > time.Second {
		t.Errorf("old holder reported Lost %v after resuming, want ≤ 1s (I4)", d)
	} else {
		t.Logf("old holder reported Lost %v after resuming", d)
	}
	ch.await(t, 20*time.Second, "exit", func(ev drill.Event) bool { return ev.Op == "exit" })

	events := run.Rec.Events()
	if leaseTok <= acq.Token {
		t.Errorf("new holder's token %d (%s), want > old holder's %d (I2)", leaseTok, leaseOwner, acq.Token)
	}
	run.Report(drill.CheckTokens(events))
	bound := e.ttl + max(500*time.Millisecond, e.ttl/4)
	run.Report(drill.CheckProgress(events, name, "old", stopAt, bound))
	res.check(t, run, true)
	run.Report(drill.Orphans(ctx, name, 2*e.ttl, e.scan))
}

// waitEntries waits until name's queue has at least n entries.
func waitEntries(t *testing.T, e *engine, name string, n int) {
	t.Helper()
	waitEntriesOr(t, e, name, n, func() bool { return false })
}

// waitEntriesOr is waitEntries that also stops waiting once done reports
// true (the entry's owner already came and went).
//
// A lease engine's waiters hold nothing on the server, so its scan shows
// the holder only: n counts the holder and its waiters, as on a queue
// engine; the wait is for the holder's row, then waiterSettle for the
// waiters (started by the caller) to make their first attempts.
func waitEntriesOr(t *testing.T, e *engine, name string, n int, done func() bool) {
	t.Helper()
	if e.family == leaseFamily && n > 1 {
		defer time.Sleep(waiterSettle)
		n = 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for {
		es, err := e.scan(ctx, name)
		if (err == nil && len(es) >= n) || done() {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("queue %q: %d entries (err %v), want ≥ %d", name, len(es), err, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
