package keeper

import (
	"context"
	"fmt"
	"time"
)

// idleWake is how long the watchdog sleeps when nothing is due sooner.
const idleWake = time.Hour

// flight is a store request in flight whose moments the watchdog keeps:
// at wait the renewer stops waiting for the answer (waited is closed), at
// end the request's context is cancelled. Keeping them on the watchdog's
// timer rather than on a timer or a context deadline each makes them pass
// on the keeper's clock, and leaves a running keeper two timers in all.
type flight struct {
	wait   time.Time     // zero: nobody waits (a queued release)
	end    time.Time     // the request's context is cancelled at end
	waited chan struct{} // closed at wait
	cancel context.CancelFunc
	answer chan answer // a Renew's answer for the waiting renewer; capacity 1

	// Guarded by Keeper.mu.
	waitOver bool // waited is closed (or there is no wait)
	late     bool // the renewer gave up waiting: the answer is renewCall's to apply
}

// startFlight registers a request's moments with the watchdog and returns
// the context for the request.
func (k *Keeper) startFlight(wait, end time.Time) (context.Context, *flight) {
	ctx, cancel := context.WithCancel(k.base)
	fl := &flight{wait: wait, end: end, waited: make(chan struct{}), cancel: cancel,
		answer: make(chan answer, 1), waitOver: wait.IsZero()}
	first := end
	if !fl.waitOver {
		first = wait
	}
	k.mu.Lock()
	k.flights[fl] = struct{}{}
	k.wakeWatchdogLocked(first)
	k.mu.Unlock()
	return ctx, fl
}

// endFlightLocked forgets a request that has returned and releases its
// context. The watchdog may wake once for it in vain.
func (k *Keeper) endFlightLocked(fl *flight) {
	delete(k.flights, fl)
	fl.cancel()
}

// wakeWatchdogLocked makes the watchdog wake by t. A busy watchdog re-arms
// its timer itself when done (rearmWatchdog), from nextWake; moving the
// timer meanwhile would mark it idle while it is still at work.
func (k *Keeper) wakeWatchdogLocked(t time.Time) {
	if !t.Before(k.nextWake) {
		return
	}
	k.nextWake = t
	if !k.checking && !k.closed {
		k.watchT.Reset(k.clock.Until(t))
	}
}

// watchdog suspends leases whose renewal is late, loses leases whose
// deadline has come, and ends the waits and the requests of the store
// calls in flight. It sleeps on its timer until the earliest such moment.
func (k *Keeper) watchdog() {
	defer k.wg.Done()
	defer k.watchT.Stop()
	for {
		select {
		case <-k.stop:
			return
		case <-k.watchT.C():
		}
		k.check(k.clock.Now())
		k.rearmWatchdog()
	}
}

// check applies the suspensions, losses and flight moments due at now,
// and plans the watchdog's next wake in nextWake.
func (k *Keeper) check(now time.Time) {
	k.mu.Lock()
	k.checking = true
	lose, wake := k.dueLeasesLocked(now, now.Add(idleWake))
	k.nextWake = k.dueFlightsLocked(now, wake)
	for _, e := range lose {
		if !e.fixed {
			// The row may still be ours on the server until its expiry:
			// free it early (owner-checked) once the store is reachable.
			k.queueLocked(e.ref[0], now)
		}
	}
	k.mu.Unlock()
	// Outside k.mu: Lose runs the lease's OnEnd, which takes it.
	for _, e := range lose {
		cause := ErrDeadline
		if e.fixed {
			cause = ErrFixedExpired
		}
		// The deadline is read under no lock: e left k.leases above, so
		// no renewal answer writes it any more.
		if e.ctl.LoseAhead(fmt.Errorf("%w (%s)", cause, e.ref[0].Key), e.deadline.Add(e.margin).Sub(now)) {
			k.lost.Add(1)
		}
	}
	// The timer's own lateness delays Lost only by scheduling delay, which
	// DriftMargin covers.
}

// rearmWatchdog resets the watchdog's timer to nextWake, which Hold and
// startFlight may have moved earlier while check ran.
func (k *Keeper) rearmWatchdog() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.checking = false
	if !k.closed {
		k.watchT.Reset(k.clock.Until(k.nextWake))
	}
}

// dueLeasesLocked suspends the leases due to be suspended at now, removes
// and returns those whose deadline has come, and returns the earlier of
// wake and the next such moment.
func (k *Keeper) dueLeasesLocked(now, wake time.Time) ([]*entry, time.Time) {
	var lose []*entry
	for e := range k.leases {
		if !now.Before(e.deadline) {
			delete(k.leases, e)
			lose = append(lose, e)
			continue
		}
		wake = earlier(wake, e.deadline)
		if e.fixed || e.suspended {
			continue
		}
		if now.Before(e.suspectAt) {
			wake = earlier(wake, e.suspectAt)
			continue
		}
		e.suspended = true
		e.ctl.Suspend() // under k.mu: see apply
		k.suspended.Add(1)
	}
	return lose, wake
}

// dueFlightsLocked ends the waits and cancels the requests due at now, and
// returns the earlier of wake and the next such moment.
func (k *Keeper) dueFlightsLocked(now, wake time.Time) time.Time {
	for fl := range k.flights {
		if !fl.waitOver {
			if now.Before(fl.wait) {
				wake = earlier(wake, fl.wait)
			} else {
				fl.waitOver = true
				close(fl.waited)
			}
		}
		if now.Before(fl.end) {
			wake = earlier(wake, fl.end)
			continue
		}
		k.endFlightLocked(fl)
	}
	return wake
}
