package scenario

import (
	"context"
	"fmt"
	"syscall"
	"time"

	"github.com/baton-go/baton/drill"
	"github.com/baton-go/baton/faultproxy"
)

// The scenarios of a holder in a child process ("old") and a waiter in
// this one ("new"): the holder takes the lock, increments both counters
// and reads them (deciding its next write), the waiter queues, the fault
// hits the holder. The waiter must be granted once the holder's session
// or lease expired (I5), with a larger token (I2), and increments three
// times. Then, where the holder survives, it sends the write it had
// decided on without looking at its lease: the fenced counter must refuse
// it (I3), the unfenced twin accepts it — a lost update, the danger the
// fence removes, and the proof that the fault was real.

// holderFault is one fault on the holder child.
type holderFault struct {
	proxied bool // the holder reaches the servers through fault proxies
	// inject injects the fault and returns what ends it once the waiter
	// has been granted and has incremented; end sends the holder "go"
	// when it survives (nil when it does not).
	inject func(tr *trial, ch *child) (end func() error, err error)
	// progress: the fault stops the holder for good or freezes it, so the
	// waiter must be granted within the I5 bound of it.
	progress bool
}

func runPaused(tr *trial) error {
	return runHolderFault(tr, holderFault{progress: true, inject: func(tr *trial, ch *child) (func() error, error) {
		heal := tr.fault("old", "pause", "SIGSTOP until the next holder has written")
		if err := ch.signal(syscall.SIGSTOP); err != nil {
			return nil, err
		}
		return func() error {
			// The decided write is queued before the process resumes: it
			// is the first thing it does.
			if err := ch.tell("go"); err != nil {
				return err
			}
			err := ch.signal(syscall.SIGCONT)
			heal()
			return err
		}, nil
	}})
}

func runKilled(tr *trial) error {
	return runHolderFault(tr, holderFault{progress: true, inject: func(tr *trial, ch *child) (func() error, error) {
		tr.fault("old", "kill", "SIGKILL")
		return nil, ch.signal(syscall.SIGKILL)
	}})
}

// transportFault is a holder fault injected at the proxies; the holder
// keeps running, so it must be told before anyone else is granted.
func transportFault(detail string, f func(p *faultproxy.Proxy) error) holderFault {
	return holderFault{proxied: true, inject: func(tr *trial, ch *child) (func() error, error) {
		heal := tr.fault("old", "cut", detail)
		if err := tr.eachProxy(f); err != nil {
			return nil, err
		}
		return func() error {
			tr.healProxies()
			heal()
			return ch.tell("go")
		}, nil
	}}
}

// runCut cuts the holder's connections at their next byte, and every
// connection it makes again, until the next holder has written.
func runCut(tr *trial) error {
	return runHolderFault(tr, transportFault("connections cut at their next byte, reconnects too",
		func(p *faultproxy.Proxy) error { return p.CutAfter("", 0) }))
}

// runBlackhole drops every byte both ways, keeping the connections open:
// a partition neither side sees as a close.
func runBlackhole(tr *trial) error {
	return runHolderFault(tr, transportFault("blackhole both ways",
		func(p *faultproxy.Proxy) error { return p.Blackhole("") }))
}

// runSlow delays the holder's requests by 1.5×TTL (± TTL/10): every
// renewal reaches the server after it expired the lease or session, so
// the holder must declare Lost before that expiry on its own clock.
func runSlow(tr *trial) error {
	d, jitter := tr.t.TTL*3/2, tr.t.TTL/10
	return runHolderFault(tr, transportFault(fmt.Sprintf("latency client→server %v ± %v", d, jitter),
		func(p *faultproxy.Proxy) error { return p.Latency(faultproxy.Upstream, d, jitter) }))
}

// holderWait bounds how long the drill waits for one step of the holder
// child (its grant, its readiness, its exit).
func (tr *trial) holderWait() time.Duration { return 5*tr.t.TTL + 10*time.Second }

func runHolderFault(tr *trial, f holderFault) error {
	var dial []string
	if f.proxied {
		var err error
		if dial, err = tr.startProxies(); err != nil {
			return err
		}
	}
	ch, err := tr.startChild("old", dial)
	if err != nil {
		return err
	}
	acq, err := ch.await(tr.ctx, tr.holderWait(), "grant", func(e drill.Event) bool {
		return e.Op == drill.OpAcquire && e.Phase != drill.Invoke
	})
	if err != nil {
		return err
	}
	if acq.Phase != drill.Ok {
		return fmt.Errorf("holder's Lock = %s %s, want a grant", acq.Phase, acq.Detail)
	}
	if _, err := ch.await(tr.ctx, tr.holderWait(), "ready", func(e drill.Event) bool { return e.Op == opReady }); err != nil {
		return err
	}
	w, err := tr.open("new", nil)
	if err != nil {
		return err
	}
	got := make(chan error, 1)
	tr.goWork(func() { got <- w.lockIncrement(3) })
	if err := tr.waitQueued(2); err != nil {
		return err
	}
	faultAt := drill.Now()
	end, err := f.inject(tr, ch)
	if err != nil {
		return err
	}
	select {
	case err := <-got:
		if err != nil {
			tr.violate("I5", "the waiter's Lock or increments = %v, want a grant after the holder's expiry", err)
		}
	case <-time.After(3*tr.t.TTL + 5*time.Second):
		tr.violate("I5", "the waiter was not granted within 3×TTL+5s of the fault")
		return nil
	case <-tr.ctx.Done():
		return tr.ctx.Err()
	}
	if f.progress {
		bound := tr.t.TTL + max(500*time.Millisecond, tr.t.TTL/4)
		for _, v := range drill.CheckProgress(tr.rec.Events(), tr.name, "old", faultAt, bound) {
			tr.violate(v.Invariant, "%s", v.Msg)
		}
	}
	if end == nil {
		return nil
	}
	resumed := drill.Now()
	if err := end(); err != nil {
		return err
	}
	if _, err := ch.await(tr.ctx, tr.holderWait(), "exit", func(e drill.Event) bool { return e.Op == opExit }); err != nil {
		return err
	}
	events := sortedEvents(tr.rec.Events())
	if !f.progress {
		// It kept running through the fault: told before anyone else was
		// granted (I7), and Lost in the end (I4).
		for _, v := range drill.CheckExclusive(events) {
			tr.violate(v.Invariant, "%s", v.Msg)
		}
	}
	switch lost, ok := lostAfter(events, "old", faultAt); {
	case !ok:
		tr.violate("I4", "the holder was never told Lost after the fault")
	case f.progress && lost < resumed:
		tr.violate("I4", "the holder reported Lost while it was frozen")
	}
	return nil
}

// lostAfter returns when client was told Lost after t.
func lostAfter(events []drill.Event, client string, t int64) (int64, bool) {
	for _, e := range events {
		if e.Client == client && e.Op == drill.OpState && e.Detail == "lost" && e.T > t {
			return e.T, true
		}
	}
	return 0, false
}

// lockIncrement takes the lock, increments both counters n times and
// releases; the release is bounded by the TTL and made after the trial's
// context ends too.
func (a *actor) lockIncrement(n int) error {
	l, err := a.lock(a.tr.ctx)
	if err != nil {
		return err
	}
	for range n {
		if err = a.increment(a.tr.ctx, l); err != nil {
			break
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), a.tr.t.TTL)
	defer cancel()
	if rerr := a.release(ctx, l); err == nil {
		err = rerr
	}
	return err
}
