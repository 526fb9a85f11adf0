package keeper

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/baton-go/baton"
)

// renewer runs renewal rounds every TTL/3 from next, the first (sooner
// after a failed round), and sends the queued releases between them.
// Apart from the Renew calls it starts (see call), it is the only
// goroutine that calls the store in the background.
func (k *Keeper) renewer(next time.Time) {
	defer k.wg.Done()
	defer k.renewT.Stop()
	failures := 0
	for {
		select {
		case <-k.stop:
			return
		case <-k.renewT.C():
		}
		now := k.clock.Now()
		afterRound := !now.Before(next)
		if afterRound {
			ok := k.round()
			k.lastRound.Store(int64(k.clock.Since(now)))
			if ok {
				failures = 0
				next = now.Add(k.interval) // from the round's start: a slow round does not stretch the period
			} else {
				// Retry soon: a few tries fit before the lease turns
				// Suspended (TTL/2) and Lost (TTL − margin).
				next = now.Add(min(k.backoff.Delay(failures), k.interval))
				failures++
			}
		}
		k.releasePending(next, afterRound)
		k.armRenewer(next)
	}
}

// armRenewer resets the renewer's timer to its next wake: the next round
// at next, or a queued release due sooner. It reads the queue under the
// same lock as queueLocked's wake-up, so a release queued while the
// renewer was busy is never left waiting for the next round.
func (k *Keeper) armRenewer(next time.Time) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.closed {
		return
	}
	wake := next
	by := k.releaseByLocked(next)
	for _, p := range k.pending {
		if !p.notBef.After(by) {
			wake = earlier(wake, p.notBef) // a zero notBef is due at once
		} // else it goes right after the round at next
	}
	k.renewT.Reset(k.clock.Until(wake))
}

// releaseByLocked returns the last moment a queued release may start
// before the round due at next: half a period before it, so that a slow
// store answers the release before the round goes out, on the connection
// the release freed (see releaseBatch). Releases due later wait and go
// right after the round. With no lease held there is no round to keep.
func (k *Keeper) releaseByLocked(next time.Time) time.Time {
	if len(k.leases) == 0 {
		return next
	}
	return next.Add(-k.interval / 2)
}

// snapshotRenewable lists the renewable leases, oldest confirmation first:
// the leases closest to Suspended and Lost go in the round's first batch,
// which a slow store answers before the batches it holds up.
func (k *Keeper) snapshotRenewable() []*entry {
	k.mu.Lock()
	defer k.mu.Unlock()
	es := make([]*entry, 0, len(k.leases))
	for e := range k.leases {
		if !e.fixed {
			es = append(es, e)
		}
	}
	slices.SortFunc(es, func(a, b *entry) int { return a.lastSent.Compare(b.lastSent) })
	return es
}

// round renews every renewable lease, in batches of Store.BatchSize sent
// one after another, and reports whether every batch was answered in time.
// It stops early when the keeper is closing.
func (k *Keeper) round() bool {
	es := k.snapshotRenewable()
	if len(es) == 0 {
		return true
	}
	k.rounds.Add(1)
	ok := true
	for batch := range slices.Chunk(es, k.store.BatchSize()) {
		if k.renewBatch(batch) {
			continue
		}
		ok = false
		select {
		case <-k.stop:
			return false
		default:
		}
	}
	return ok
}

// renewBatch renews one batch, applies the answer, and reports whether it
// came in time.
func (k *Keeper) renewBatch(batch []*entry) bool {
	refs := make([]Ref, len(batch))
	var last time.Time // the batch's latest deadline
	k.mu.Lock()
	for i, e := range batch {
		refs[i] = e.ref[0]
		last = later(last, e.deadline)
	}
	k.mu.Unlock()
	sent := k.clock.Now()
	k.batches.Add(1)
	renewed, err := k.call(batch, refs, sent, last)
	if k.obs != nil {
		k.emitRenewal(len(batch), sent, false, err)
	}
	if err != nil {
		k.failures.Add(1)
		k.lastErr.Store(&err)
		return false
	}
	k.apply(batch, renewed, sent)
	return true
}

// errLate is the error of a renewal batch not answered in time (see call);
// an answer that comes later, before the request's context is cancelled,
// is still applied to the batch's leases that are not Lost by then.
var errLate = errors.New("keeper: renewal not answered in time (a late answer still counts)")

// answer is what a Store.Renew call returned.
type answer struct {
	renewed []bool
	err     error
}

// call sends one Store.Renew for batch and waits for its answer until
// TTL/2 after sent or last (the batch's last deadline), whichever comes
// first, but at least TTL/3. The request itself may run until last (or
// the end of the wait, if later): a slow answer is still worth having,
// since the server extended the leases when it ran the request, after
// sent. Cutting it at the wait instead would also make the
// driver close a pooled connection whose replacement (a TCP and database
// handshake, statement prepares) costs more round trips than the next
// round has, so a server slow but answering would cost every lease. An
// answer that comes after the wait is applied by the goroutine that
// received it (renewCall); meanwhile the next round retries, usually on
// another connection. Both moments are kept by the watchdog (a flight),
// so they pass on the keeper's clock.
func (k *Keeper) call(batch []*entry, refs []Ref, sent, last time.Time) ([]bool, error) {
	wait := later(sent.Add(k.interval), earlier(last, sent.Add(k.ttl/2)))
	ctx, fl := k.startFlight(wait, later(wait, last))
	k.wg.Add(1)
	go k.renewCall(ctx, fl, batch, refs, sent)
	select {
	case a := <-fl.answer:
		return a.renewed, a.err
	case <-fl.waited:
	case <-k.stop:
	}
	// renewCall sends its answer under k.mu after reading fl.late: one last
	// look under the lock either takes the answer or leaves it to renewCall.
	k.mu.Lock()
	defer k.mu.Unlock()
	select {
	case a := <-fl.answer:
		return a.renewed, a.err
	default:
		fl.late = true
		return nil, errLate
	}
}

// renewCall is the goroutine of one Store.Renew call: it hands the answer
// to the waiting renewer, or applies it itself when the renewer has given
// up waiting. The keeper owns it: Close cancels its request and waits.
func (k *Keeper) renewCall(ctx context.Context, fl *flight, batch []*entry, refs []Ref, sent time.Time) {
	defer k.wg.Done()
	renewed, err := k.store.Renew(ctx, refs, k.ttl)
	if err == nil && len(renewed) != len(refs) {
		err = fmt.Errorf("keeper: Store.Renew returned %d results for %d refs", len(renewed), len(refs))
	}
	k.mu.Lock()
	k.endFlightLocked(fl)
	late := fl.late
	if !late {
		fl.answer <- answer{renewed, err} // buffered: never blocks
	}
	k.mu.Unlock()
	if late && k.obs != nil {
		k.emitRenewal(len(batch), sent, true, err)
	}
	if late && err == nil {
		k.apply(batch, renewed, sent)
		k.late.Add(1)
	}
}

// emitRenewal reports one renewal batch of n leases sent at sent: its
// answer (late: after the renewer stopped waiting) or its failure.
func (k *Keeper) emitRenewal(n int, sent time.Time, late bool, err error) {
	now := k.clock.Now()
	k.obs.Observe(context.Background(), baton.Event{
		Kind: baton.EventRenewal, Time: now, Engine: k.engine,
		Count: n, Duration: now.Sub(sent), Late: late, Err: err,
	})
}

// apply records a batch's answers: confirmed leases get a new deadline
// (and Held back if they were Suspended and the renewal is recent enough);
// leases the store reports gone are Lost, unless a Release of theirs is in
// flight.
func (k *Keeper) apply(batch []*entry, renewed []bool, sent time.Time) {
	var lose []*entry
	now := k.clock.Now()
	k.mu.Lock()
	for i, e := range batch {
		if _, live := k.leases[e]; !live {
			continue // ended or released meanwhile
		}
		if !renewed[i] {
			if !e.releasing {
				delete(k.leases, e)
				lose = append(lose, e)
			}
			continue
		}
		if sent.After(e.lastSent) {
			e.lastSent = sent
			e.deadline = sent.Add(k.ttl - k.margin)
			e.margin = k.margin
			e.suspectAt = sent.Add(k.suspect)
		}
		if e.suspended && now.Before(e.suspectAt) {
			// Under k.mu, like Suspend in check: the flag and the lease's
			// state change together, so a Suspend cannot land after this
			// Resume and stick.
			e.suspended = false
			e.ctl.Resume()
		}
	}
	k.mu.Unlock()
	for _, e := range lose {
		if e.ctl.Lose(fmt.Errorf("%w (%s)", ErrGone, e.ref[0].Key)) {
			k.lost.Add(1)
		}
	}
	// No watchdog wake-up: renewals only move events later, and the
	// watchdog recomputes its next wake when it wakes as planned.
}

// releasePending sends the queued releases that are due, in batches, and
// stops once it is too close to the next round, due at next (see
// releaseByLocked): a slow store must not hold up the renewals behind a
// long queue of releases. The rest stay queued, due at once, and go after
// that round. Right after a round one batch is always sent, so failing
// rounds that are always due cannot starve the queue.
func (k *Keeper) releasePending(next time.Time, afterRound bool) {
	due := k.takeDue(k.clock.Now())
	for sent := 0; len(due) > 0; sent++ {
		k.mu.Lock()
		late := !k.clock.Now().Before(k.releaseByLocked(next))
		if late && (sent > 0 || !afterRound) {
			if !k.closed {
				k.pending = append(k.pending, due...)
			}
			k.mu.Unlock()
			return
		}
		k.mu.Unlock()
		n := min(len(due), k.store.BatchSize())
		k.releaseBatch(due[:n], next)
		due = due[n:]
	}
}

// takeDue removes from the queue and returns the releases due at now. It
// drops those past their until: the lease has expired on the server.
func (k *Keeper) takeDue(now time.Time) []pendingRelease {
	k.mu.Lock()
	defer k.mu.Unlock()
	var due []pendingRelease
	keep := k.pending[:0]
	for _, p := range k.pending {
		switch {
		case now.After(p.until):
			// Dropped: the lease has expired on the server.
		case now.Before(p.notBef):
			keep = append(keep, p)
		default:
			due = append(due, p)
		}
	}
	clear(k.pending[len(keep):]) // no stale refs behind the kept ones
	k.pending = keep
	return due
}

// minReleaseWait is the least time, as a fraction of the renewal period,
// the renewer waits for a release batch's answer when a round is already
// due: long enough for a store that answers at once to be heard before the
// round, short enough not to delay it.
const minReleaseWait = 10

// releaseBatch sends one batch of queued releases in a goroutine of its
// own (releaseCall applies the answer) and waits for the answer until
// next, when the next round is due, or a tenth of the period if the round
// is due already. A store slower than that answers the release while the
// round goes out on time: waiting for the answer instead delayed a round,
// behind a slow two-statement release of an abandoned grant, past its
// lease's deadline. Releases start half a period before the round at the
// latest (releaseByLocked), so that a store answering within that frees
// the connection before the round needs one. The request runs until the
// batch's leases must have expired on the server (their until), when it
// is moot, and at least TTL/3: cutting it sooner closed a pooled
// connection, and the retry, on a cold one, took longer still through a
// slow link.
func (k *Keeper) releaseBatch(batch []pendingRelease, next time.Time) {
	refs := make([]Ref, len(batch))
	for i, p := range batch {
		refs[i] = p.ref
	}
	now := k.clock.Now()
	end := now.Add(k.interval)
	for _, p := range batch {
		end = later(end, p.until)
	}
	wait := earlier(later(next, now.Add(k.interval/minReleaseWait)), end)
	ctx, fl := k.startFlight(wait, end)
	k.wg.Add(1)
	go k.releaseCall(ctx, fl, batch, refs) // owner: the keeper (wg); Close cancels its request
	select {
	case <-fl.answer:
	case <-fl.waited:
	case <-k.stop:
	}
}

// releaseCall is the goroutine of one queued-release batch: it counts the
// success or queues each release again after a backoff, unless that would
// be past its until, then tells the renewer, if it still waits. A retry
// queued after the renewer stopped waiting goes when the renewer next
// wakes, at the latest with the next round.
func (k *Keeper) releaseCall(ctx context.Context, fl *flight, batch []pendingRelease, refs []Ref) {
	defer k.wg.Done()
	err := k.store.Release(ctx, refs)
	k.mu.Lock()
	defer k.mu.Unlock()
	k.endFlightLocked(fl)
	fl.answer <- answer{err: err} // buffered: never blocks; read only by a renewer still waiting
	if err == nil {
		k.releases.Add(1)
		return
	}
	retry := k.clock.Now()
	for _, p := range batch {
		p.tries++
		p.notBef = retry.Add(k.backoff.Delay(p.tries))
		if !k.closed && !p.notBef.After(p.until) {
			k.pending = append(k.pending, p)
		}
	}
}
