package scenario

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/drill"
	"github.com/baton-go/baton/faultproxy"
)

// The scenarios of in-process clients only.

// runLostRelease: A's release is applied but its answer is lost (every
// server→client byte dropped); B, waiting, is granted; A retries its
// release as a caller would after an unknown result. The retry must not
// remove B's grant (I9: etcd #22082, a retried unlock deleted the newer
// holder's key). When the release did not get through at all, A still
// holds: B is granted after A's retry instead.
func runLostRelease(tr *trial) error {
	dial, err := tr.startProxies()
	if err != nil {
		return err
	}
	a, err := tr.open("a", dial)
	if err != nil {
		return err
	}
	b, err := tr.open("b", nil)
	if err != nil {
		return err
	}
	la, err := a.lock(tr.ctx)
	if err != nil {
		return fmt.Errorf("a's Lock: %w", err)
	}
	if err := a.increment(tr.ctx, la); err != nil {
		return fmt.Errorf("a's increment: %w", err)
	}
	got := make(chan *baton.Lease, 1)
	tr.goWork(func() {
		l, err := b.lock(tr.ctx)
		if err != nil && tr.ctx.Err() == nil {
			tr.violate("I5", "b's Lock = %v", err)
		}
		got <- l
	})
	if err := tr.waitQueued(2); err != nil {
		return err
	}
	heal := tr.fault("a", "cut", "every answer dropped (the release's reply lost)")
	if err := tr.eachProxy(func(p *faultproxy.Proxy) error { return p.Blackhole(faultproxy.Downstream) }); err != nil {
		return err
	}
	rctx, rcancel := context.WithTimeout(tr.ctx, 300*time.Millisecond)
	err = a.release(rctx, la)
	rcancel()
	if err == nil {
		return errors.New("a's Release through a link that drops every answer returned nil: the reply was not lost")
	}
	// The connections that lost bytes are broken for good: cut them, heal.
	_ = tr.eachProxy(func(p *faultproxy.Proxy) error { p.Refuse(); return nil })
	tr.healProxies()
	heal()
	var lb *baton.Lease
	select {
	case lb = <-got:
	case <-time.After(tr.t.TTL):
		tr.rec.Info("a", "note", tr.name, "b not granted within TTL: the release was not applied")
	case <-tr.ctx.Done():
		return tr.ctx.Err()
	}
	var rerr error
	for range 5 {
		rctx, rcancel := context.WithTimeout(tr.ctx, time.Second)
		rerr = a.release(rctx, la)
		rcancel()
		if rerr == nil || errors.Is(rerr, baton.ErrLost) || errors.Is(rerr, baton.ErrNotHeld) {
			break
		}
		tr.sleep(200 * time.Millisecond)
	}
	if lb == nil {
		select {
		case lb = <-got:
		case <-time.After(2 * tr.t.TTL):
			tr.violate("I5", "b not granted within 2×TTL of a's retried release (%v)", rerr)
			return nil
		case <-tr.ctx.Done():
			return tr.ctx.Err()
		}
	}
	if lb == nil {
		return nil // b's Lock failed: reported
	}
	tr.sleep(200 * time.Millisecond) // let a wrongful delete's events land
	if st := lb.State(); st != baton.Held {
		tr.violate("I9", "b's lease is %v after a's retried release (%v), want held", st, rerr)
	}
	if err := b.increment(tr.ctx, lb); err != nil {
		tr.violate("I9", "b's increment after a's retried release = %v", err)
	}
	if err := b.release(tr.ctx, lb); err != nil {
		tr.violate("I9", "b's Release after a's retried release = %v, want nil", err)
	}
	for _, v := range drill.CheckExclusive(sortedEvents(tr.rec.Events())) {
		tr.violate(v.Invariant, "%s", v.Msg)
	}
	return nil
}

// clientPool is how many clients the waiters of the herd and cancel-bulk
// scenarios share: each waiter is an acquire of its own (a queue entry of
// its own on a queue engine), without a session per waiter.
const clientPool = 4

// waiters opens clientPool clients and n actors w0…w(n-1) on them.
func (tr *trial) waiters(n int) ([]*actor, error) {
	var cs []*actor
	for i := range min(n, clientPool) {
		a, err := tr.open("w"+strconv.Itoa(i), nil)
		if err != nil {
			return nil, err
		}
		cs = append(cs, a)
	}
	ws := make([]*actor, n)
	for i := range ws {
		if i < len(cs) {
			ws[i] = cs[i]
			continue
		}
		w, err := tr.on("w"+strconv.Itoa(i), cs[i%len(cs)].c)
		if err != nil {
			return nil, err
		}
		ws[i] = w
	}
	return ws, nil
}

// cancelSlack is how soon a cancelled Lock must return.
const cancelSlack = 250 * time.Millisecond

// runCancelBulk (CURATOR-79: an interrupted acquire left its node
// behind): half of the herd's waiters are cancelled at once, then the
// plug releases. Each cancelled Lock returns the context's error within
// cancelSlack (or a grant, if the grant won the race); the others are
// all granted, one at a time; nothing is left behind.
func runCancelBulk(tr *trial) error {
	plug, err := tr.open("plug", nil)
	if err != nil {
		return err
	}
	lp, err := plug.lock(tr.ctx)
	if err != nil {
		return fmt.Errorf("plug's Lock: %w", err)
	}
	ws, err := tr.waiters(tr.herd)
	if err != nil {
		return err
	}
	type outcome struct {
		err error
		at  time.Time
	}
	outs := make([]outcome, len(ws))
	cancels := make([]context.CancelFunc, len(ws))
	var wg sync.WaitGroup
	for i, w := range ws {
		wctx, wcancel := context.WithCancel(tr.ctx)
		cancels[i] = wcancel
		wg.Add(1)
		tr.goWork(func() {
			defer wg.Done()
			defer wcancel()
			l, err := w.lock(wctx)
			outs[i] = outcome{err, time.Now()}
			if err == nil {
				w.work(l, 0)
			}
		})
	}
	if err := tr.waitQueued(len(ws) + 1); err != nil {
		return err
	}
	victims := tr.rand.Perm(len(ws))[:len(ws)/2]
	tr.fault("", "cancel", fmt.Sprintf("%d of %d waiters cancelled at once", len(victims), len(ws)))
	cancelAt := time.Now()
	for _, v := range victims {
		tr.rec.Info(ws[v].id, "cancel", tr.name, "")
		cancels[v]()
	}
	rctx, rcancel := context.WithTimeout(tr.ctx, tr.t.TTL)
	_ = plug.release(rctx, lp)
	rcancel()
	if !tr.waitGroup(&wg, time.Duration(len(ws))*tr.t.TTL) {
		tr.violate("I5", "waiters still waiting %v after the plug's release", time.Duration(len(ws))*tr.t.TTL)
		return nil
	}
	victim := map[int]bool{}
	for _, v := range victims {
		victim[v] = true
		switch o := outs[v]; {
		case o.err == nil: // the grant won the race with the cancel
		case !errors.Is(o.err, context.Canceled):
			tr.violate("I6", "%s's cancelled Lock = %v, want context.Canceled", ws[v].id, o.err)
		case o.at.Sub(cancelAt) > cancelSlack:
			tr.violate("I6", "%s's Lock returned %v after its cancel, want ≤ %v", ws[v].id, o.at.Sub(cancelAt), cancelSlack)
		}
	}
	for i, o := range outs {
		if !victim[i] && o.err != nil {
			tr.violate("I5", "%s (not cancelled) Lock = %v, want a grant", ws[i].id, o.err)
		}
	}
	for _, v := range drill.CheckExclusive(sortedEvents(tr.rec.Events())) {
		tr.violate(v.Invariant, "%s", v.Msg)
	}
	return nil
}

// runHerd: the herd's waiters queue behind a plug, which releases; each
// is granted exactly once, holds a few milliseconds and increments; no
// two grants overlap (I7) and no increment is lost (I1).
func runHerd(tr *trial) error {
	plug, err := tr.open("plug", nil)
	if err != nil {
		return err
	}
	lp, err := plug.lock(tr.ctx)
	if err != nil {
		return fmt.Errorf("plug's Lock: %w", err)
	}
	ws, err := tr.waiters(tr.herd)
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	for _, w := range ws {
		wg.Add(1)
		tr.goWork(func() {
			defer wg.Done()
			l, err := w.lock(tr.ctx)
			if err != nil {
				if tr.ctx.Err() == nil {
					tr.violate("I5", "%s's Lock = %v", w.id, err)
				}
				return
			}
			w.work(l, 5*time.Millisecond)
		})
	}
	if err := tr.waitQueued(len(ws) + 1); err != nil {
		return err
	}
	tr.fault("plug", "release", fmt.Sprintf("the plug releases to %d waiters", len(ws)))
	rctx, rcancel := context.WithTimeout(tr.ctx, tr.t.TTL)
	_ = plug.release(rctx, lp)
	rcancel()
	if !tr.waitGroup(&wg, time.Duration(len(ws))*tr.t.TTL) {
		tr.violate("I5", "waiters still waiting %v after the plug's release", time.Duration(len(ws))*tr.t.TTL)
		return nil
	}
	events := sortedEvents(tr.rec.Events())
	n := map[string]int{}
	for _, g := range drill.Grants(events, tr.name) {
		n[g.Client]++
	}
	for _, w := range ws {
		if n[w.id] != 1 {
			tr.violate("I5", "%s granted %d times, want once", w.id, n[w.id])
		}
	}
	for _, v := range drill.CheckExclusive(events) {
		tr.violate(v.Invariant, "%s", v.Msg)
	}
	return nil
}

// work increments both counters under l, holds it hold in all, and
// releases it.
func (a *actor) work(l *baton.Lease, hold time.Duration) {
	until := time.Now().Add(hold)
	if err := a.increment(a.tr.ctx, l); err != nil && a.tr.ctx.Err() == nil {
		a.tr.violate("I1", "%s's increment = %v", a.id, err)
	}
	if d := time.Until(until); d > 0 {
		a.tr.sleep(d)
	}
	ctx, cancel := context.WithTimeout(context.Background(), a.tr.t.TTL)
	defer cancel()
	if err := a.release(ctx, l); err != nil && a.tr.ctx.Err() == nil {
		a.tr.violate("I9", "%s's Release = %v", a.id, err)
	}
}

// waitGroup waits for wg up to d (or the trial's end) and reports
// whether it finished.
func (tr *trial) waitGroup(wg *sync.WaitGroup, d time.Duration) bool {
	done := make(chan struct{})
	// owner: wg, whose goroutines are trial work that close ends, so
	// this ends by the trial's close at the latest.
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-time.After(d):
	case <-tr.ctx.Done():
	}
	return false
}

// runWaiterExpiry (CURATOR-604, etcd #19597): a waiter's own session
// expires while it waits — its link is blackholed past the TTL, and the
// holder releases meanwhile, so that a waiter trusting its old queue
// position would now think it is first. Its Lock must return
// ErrSessionLost within TTL + 500ms of the fault, never a grant; then a
// newcomer is granted at once: the dead waiter blocks nobody.
func runWaiterExpiry(tr *trial) error {
	a, err := tr.open("a", nil)
	if err != nil {
		return err
	}
	la, err := a.lock(tr.ctx)
	if err != nil {
		return fmt.Errorf("a's Lock: %w", err)
	}
	dial, err := tr.startProxies()
	if err != nil {
		return err
	}
	w, err := tr.open("w", dial)
	if err != nil {
		return err
	}
	type result struct {
		l   *baton.Lease
		err error
		at  int64
	}
	got := make(chan result, 1)
	tr.goWork(func() {
		l, err := w.lock(tr.ctx)
		if l != nil {
			ctx, cancel := context.WithTimeout(context.Background(), tr.t.TTL)
			_ = w.release(ctx, l)
			cancel()
		}
		got <- result{l, err, drill.Now()}
	})
	if err := tr.waitQueued(2); err != nil {
		return err
	}
	heal := tr.fault("w", "cut", "the waiter's link blackholed past its session timeout")
	if err := tr.eachProxy(func(p *faultproxy.Proxy) error { return p.Blackhole("") }); err != nil {
		return err
	}
	expired := drill.Now()
	tr.sleep(tr.t.TTL * 3 / 2)
	rctx, rcancel := context.WithTimeout(tr.ctx, tr.t.TTL)
	_ = a.release(rctx, la)
	rcancel()
	tr.sleep(200 * time.Millisecond)
	tr.healProxies()
	heal()
	var r result
	select {
	case r = <-got:
	case <-time.After(3 * tr.t.TTL):
		tr.violate("I4", "the waiter still waits 3×TTL after its session expired (etcd #19597)")
		return nil
	case <-tr.ctx.Done():
		return tr.ctx.Err()
	}
	switch bound := tr.t.TTL + 500*time.Millisecond; {
	case r.err == nil:
		tr.violate("I4", "the waiter was granted (token %d) after its session expired, want ErrSessionLost (CURATOR-604)", r.l.Token())
	case !errors.Is(r.err, baton.ErrSessionLost):
		tr.violate("I4", "the waiter's Lock = %v, want ErrSessionLost", r.err)
	case time.Duration(r.at-expired) > bound:
		tr.violate("I4", "the waiter returned %v after its session expired, want ≤ %v", time.Duration(r.at-expired), bound)
	}
	c, err := tr.open("c", nil)
	if err != nil {
		return err
	}
	cctx, ccancel := context.WithTimeout(tr.ctx, 2*tr.t.TTL)
	defer ccancel()
	lc, err := c.lock(cctx)
	if err != nil {
		tr.violate("I8", "a newcomer's Lock = %v, want the lock free of the dead waiter", err)
		return nil
	}
	c.work(lc, 0)
	return nil
}
