// Package keeper holds leases on stores that expire them by TTL (SQL rows,
// Redis keys): it renews them, watches the time left, and reports Suspended
// and Lost through baton.Control. It is written once and shared by every
// TTL engine; it knows nothing about SQL or Redis, only the small Store
// interface the engine implements.
//
// # Timing
//
// Every renewable lease is renewed every TTL/3, all of a Keeper's leases in
// the same round, in batches of Store.BatchSize (one round trip each). For
// each lease the keeper records the send time, on Go's monotonic clock, of
// the last renewal (or acquire) the store confirmed. The server set the new
// expiry when it executed that request, which is after it was sent, so the
// server-side expiry is never earlier than sendTime + TTL. From that:
//
//   - Suspended when no renewal sent in the last TTL/2 was confirmed (an
//     answer is about TTL/6 late): ownership is in doubt, pause side
//     effects. A later confirmed renewal moves it back to Held.
//   - Lost at sendTime + TTL − DriftMargin. DriftMargin (default
//     max(TTL/10, 100ms)) absorbs clock-rate drift between this host and
//     the server and the scheduling delay between the deadline and the
//     moment the lease's context is cancelled; it is what makes "Lost
//     strictly before the server can expire the lease" hold.
//   - Lost at once, final, when a renewal finds the lease gone, expired or
//     owned by someone else. The keeper never re-takes an expired lease:
//     renewal is conditional on the owner and on the lease being unexpired
//     on the server's clock.
//
// A lease with a fixed lease time (Hold with fixed > 0) is never renewed
// and is Lost at sendTime + fixed − DriftMargin, as a Redisson lock with an
// explicit leaseTime expires.
//
// None of this survives a host that suspends (Go's monotonic clock stops);
// fencing tokens do.
//
// # Goroutines
//
// A Keeper runs exactly two goroutines, whatever the number of leases: the
// renewer (rounds of batched renewals and queued releases) and the
// watchdog (suspension and deadlines). Close stops both and waits for them.
package keeper

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/baton-go/baton"
)

// Ref names one lease to the Store.
type Ref struct {
	Key   string // the engine's key for the lease (a row's name, a Redis key)
	Owner string // the grant's owner value; renew and release check it
	Aux   any    // engine-private detail (a row's slot); the keeper never reads it
}

// Store is what an engine implements for the keeper. Both calls are
// conditional on Ref.Owner, so a late or repeated call never touches a
// newer grant of the same key.
type Store interface {
	// BatchSize is the most refs one Renew or Release call takes; each call
	// is meant to be one round trip.
	BatchSize() int

	// Renew extends each lease in refs to ttl from now on the server's
	// clock, but only where it is still owned by ref.Owner and has not
	// expired on the server. renewed[i] reports whether refs[i] was
	// extended; false means gone, expired or taken, and is final. An error
	// means the outcome is unknown for the whole batch.
	Renew(ctx context.Context, refs []Ref, ttl time.Duration) (renewed []bool, err error)

	// Release frees each lease in refs that is still owned by ref.Owner,
	// and nothing else. Releasing a lease that is already free, expired or
	// taken is not an error. It must be safe to call again after an error.
	Release(ctx context.Context, refs []Ref) error
}

// Options configure New.
type Options struct {
	// TTL is the server-side lease time of renewable leases; required.
	TTL time.Duration
	// DriftMargin is subtracted from every deadline (see the package doc);
	// 0 means max(TTL/10, 100ms). It must be below TTL/2.
	DriftMargin time.Duration
	// Backoff paces retried renewal rounds and queued releases.
	Backoff baton.Backoff
}

// Stats counts the keeper's work since New, for tests and monitoring.
type Stats struct {
	Held          int    // leases held now
	Rounds        uint64 // renewal rounds started
	RenewBatches  uint64 // Store.Renew calls (round trips)
	RenewFailures uint64 // Store.Renew calls that returned an error
	Releases      uint64 // Store.Release calls that succeeded
	Suspended     uint64 // Held → Suspended transitions
	Lost          uint64 // leases declared Lost by the keeper
	// LastRound is how long the last renewal round took; near TTL/6 the
	// store is too slow (or its connection pool too small) for the number
	// of leases, and leases start to turn Suspended.
	LastRound time.Duration
	// LastRenewError is the error of the last failed Store.Renew, if any.
	LastRenewError error
}

// errors the keeper's leases end with; all wrap baton.ErrLost via Control.
var (
	// ErrDeadline is the cause of a lease lost because no renewal was
	// confirmed before the server could have expired it.
	ErrDeadline = errors.New("keeper: no renewal confirmed before the lease could expire on the server")
	// ErrGone is the cause of a lease lost because a renewal found it gone,
	// expired or owned by someone else.
	ErrGone = errors.New("keeper: the server reports the lease gone, expired or taken")
	// ErrFixedExpired is the cause of a fixed-time lease reaching its end.
	ErrFixedExpired = errors.New("keeper: the lease's fixed lease time ran out")
)

// Keeper holds leases of one Store. Its methods are safe for concurrent use.
type Keeper struct {
	store    Store
	ttl      time.Duration
	interval time.Duration // renewal period, TTL/3
	suspect  time.Duration // Suspended after this long without a confirmed renewal
	margin   time.Duration
	backoff  baton.Backoff

	stop    chan struct{}   // closed by Close
	base    context.Context // cancelled by Close: in-flight requests end with it
	cancel  context.CancelFunc
	kickR   chan struct{} // wakes the renewer (queued releases)
	kickW   chan struct{} // wakes the watchdog (a new lease)
	wg      sync.WaitGroup
	closeMu sync.Mutex // serialises Close

	mu      sync.Mutex
	closed  bool
	leases  map[*entry]struct{}
	pending []pendingRelease
	// nextWake is when the watchdog plans to wake next.
	nextWake time.Time

	rounds, batches, failures, releases, suspended, lost atomic.Uint64
	lastRound                                            atomic.Int64
	lastErr                                              atomic.Pointer[error]
}

// entry is one held lease. Its fields are guarded by Keeper.mu.
type entry struct {
	ref       Ref
	ctl       *baton.Control
	fixed     bool      // never renewed
	lastSent  time.Time // send time of the last confirmed renewal or acquire
	deadline  time.Time // Lost at
	suspectAt time.Time // Suspended at (zero for fixed leases)
	suspended bool
	releasing bool // a Release is in flight: a "gone" answer is expected
}

// pendingRelease is a release queued for the renewer.
type pendingRelease struct {
	ref    Ref
	until  time.Time // give up after (the lease has expired on the server by then)
	notBef time.Time // next attempt not before
	tries  int
}

// New starts a keeper for store. Close stops it.
func New(store Store, o Options) (*Keeper, error) {
	switch {
	case store == nil:
		return nil, fmt.Errorf("%w: keeper: nil Store", baton.ErrInvalidOption)
	case o.TTL <= 0:
		return nil, fmt.Errorf("%w: keeper: TTL %v, want > 0", baton.ErrInvalidOption, o.TTL)
	case store.BatchSize() < 1:
		return nil, fmt.Errorf("%w: keeper: Store.BatchSize() = %d, want ≥ 1", baton.ErrInvalidOption, store.BatchSize())
	case o.DriftMargin < 0 || o.DriftMargin >= o.TTL/2:
		return nil, fmt.Errorf("%w: keeper: DriftMargin %v, want in [0, TTL/2)", baton.ErrInvalidOption, o.DriftMargin)
	}
	if o.DriftMargin == 0 {
		o.DriftMargin = max(o.TTL/10, 100*time.Millisecond)
		if o.DriftMargin >= o.TTL/2 {
			o.DriftMargin = o.TTL / 4
		}
	}
	k := &Keeper{
		store:    store,
		ttl:      o.TTL,
		interval: o.TTL / 3,
		suspect:  o.TTL / 2,
		margin:   o.DriftMargin,
		backoff:  o.Backoff,
		stop:     make(chan struct{}),
		kickR:    make(chan struct{}, 1),
		kickW:    make(chan struct{}, 1),
		leases:   make(map[*entry]struct{}),
	}
	k.base, k.cancel = context.WithCancel(context.Background())
	k.wg.Add(2)
	go k.renewer()
	go k.watchdog()
	return k, nil
}

// TTL returns the lease time of renewable leases.
func (k *Keeper) TTL() time.Duration { return k.ttl }

// DriftMargin returns the margin subtracted from every deadline.
func (k *Keeper) DriftMargin() time.Duration { return k.margin }

// Stats returns the keeper's counters.
func (k *Keeper) Stats() Stats {
	k.mu.Lock()
	n := len(k.leases)
	k.mu.Unlock()
	s := Stats{
		Held:          n,
		Rounds:        k.rounds.Load(),
		RenewBatches:  k.batches.Load(),
		RenewFailures: k.failures.Load(),
		Releases:      k.releases.Load(),
		Suspended:     k.suspended.Load(),
		Lost:          k.lost.Load(),
		LastRound:     time.Duration(k.lastRound.Load()),
	}
	if p := k.lastErr.Load(); p != nil {
		s.LastRenewError = *p
	}
	return s
}

// Hold builds the lease for a grant the engine has just made on the store
// and keeps it: g is passed to baton.NewLease with Release and OnEnd
// supplied by the keeper (g.OnEnd, if set, still runs). sent is the send
// time of the request that created the grant, taken before sending it. A
// fixed > 0 is the lease time of a lease that is never renewed; the engine
// must have created the grant with that lease time.
//
// Hold fails, and queues a release of ref, when the keeper is closed
// (baton.ErrClosed) or when the grant's deadline has already passed
// (baton.ErrLost: the acquire took so long that the lease may have expired).
func (k *Keeper) Hold(parent context.Context, g baton.Grant, ref Ref, sent time.Time, fixed time.Duration) (*baton.Lease, error) {
	ttl := k.ttl
	if fixed > 0 {
		ttl = fixed
	}
	margin := min(k.margin, ttl/4)
	e := &entry{ref: ref, fixed: fixed > 0, lastSent: sent, deadline: sent.Add(ttl - margin)}
	if !e.fixed {
		e.suspectAt = sent.Add(k.suspect)
	}
	engineEnd := g.OnEnd
	g.Release = func(ctx context.Context) error { return k.release(ctx, e) }
	g.OnEnd = func() {
		k.mu.Lock()
		delete(k.leases, e)
		k.mu.Unlock()
		if engineEnd != nil {
			engineEnd()
		}
	}
	lease, ctl := baton.NewLease(parent, g)
	e.ctl = ctl

	k.mu.Lock()
	switch {
	case k.closed:
		k.mu.Unlock()
		k.Abandon(ref)
		ctl.Lose(baton.ErrClosed)
		return nil, fmt.Errorf("keeper: hold %q: %w", ref.Key, baton.ErrClosed)
	case !time.Now().Before(e.deadline):
		k.mu.Unlock()
		k.Abandon(ref)
		ctl.Lose(ErrDeadline)
		return nil, fmt.Errorf("keeper: hold %q: %w: %w", ref.Key, baton.ErrLost, ErrDeadline)
	}
	k.leases[e] = struct{}{}
	first := e.deadline
	if !e.fixed {
		first = e.suspectAt
	}
	// Wake the watchdog only when this lease's first event comes before its
	// planned wake: a scan is O(leases), and a kick per acquire would make
	// holding n leases cost O(n²).
	early := first.Before(k.nextWake)
	if early {
		k.nextWake = first
	}
	k.mu.Unlock()
	if early {
		kick(k.kickW)
	}
	return lease, nil
}

// Abandon queues an owner-checked release of ref, retried in the
// background until the lease must have expired on the server. Engines call
// it when an acquire's outcome is unknown (its context ended or the
// connection failed mid-request), so a grant nobody will use is freed
// promptly instead of blocking others for a whole TTL.
func (k *Keeper) Abandon(ref Ref) {
	k.mu.Lock()
	k.queueLocked(ref, time.Now())
	k.mu.Unlock()
	kick(k.kickR)
}

func (k *Keeper) queueLocked(ref Ref, now time.Time) {
	if k.closed {
		return // Close released what it could; the TTL frees the rest
	}
	k.pending = append(k.pending, pendingRelease{ref: ref, until: now.Add(k.ttl + k.interval)})
}

// release is the lease's Grant.Release: the owner-checked removal. The
// lease stays renewed while the removal is in flight, so a failed removal
// leaves it held and the caller may retry (baton.Lease.Release).
func (k *Keeper) release(ctx context.Context, e *entry) error {
	k.mu.Lock()
	e.releasing = true
	k.mu.Unlock()
	err := k.store.Release(ctx, []Ref{e.ref})
	k.mu.Lock()
	e.releasing = false
	if err == nil {
		delete(k.leases, e)
	}
	k.mu.Unlock()
	if err == nil {
		k.releases.Add(1)
	}
	return err
}

// Close stops the keeper: every lease it holds ends Lost (cause wrapping
// baton.ErrClosed) and is released on the store in batches, within about
// one TTL/3 per batch; leases that cannot be released expire on the server
// by themselves. Later calls return an error wrapping baton.ErrClosed.
func (k *Keeper) Close() error {
	k.closeMu.Lock()
	defer k.closeMu.Unlock()
	k.mu.Lock()
	if k.closed {
		k.mu.Unlock()
		return fmt.Errorf("keeper: %w", baton.ErrClosed)
	}
	k.closed = true
	held := make([]*entry, 0, len(k.leases))
	for e := range k.leases {
		held = append(held, e)
	}
	refs := make([]Ref, 0, len(held)+len(k.pending))
	for _, e := range held {
		refs = append(refs, e.ref)
	}
	for _, p := range k.pending {
		refs = append(refs, p.ref)
	}
	k.pending = nil
	k.mu.Unlock()

	close(k.stop)
	k.cancel()
	k.wg.Wait()
	for _, e := range held {
		e.ctl.Lose(fmt.Errorf("keeper closed: %w", baton.ErrClosed))
	}
	// Release with a bounded context per batch: a partitioned store must
	// not hang Close; its leases expire by their TTL.
	for len(refs) > 0 {
		n := min(len(refs), k.store.BatchSize())
		ctx, cancel := context.WithTimeout(context.Background(), max(k.interval, 100*time.Millisecond))
		if err := k.store.Release(ctx, refs[:n]); err == nil {
			k.releases.Add(1)
		}
		cancel()
		refs = refs[n:]
	}
	return nil
}

// later returns the later of a and b.
func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// earlier returns the earlier of a and b.
func earlier(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// kick wakes a goroutine waiting on ch without blocking.
func kick(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// renewer runs renewal rounds every TTL/3 (sooner after a failed batch)
// and the queued releases between them. It is the only goroutine that
// calls the store in the background.
func (k *Keeper) renewer() {
	defer k.wg.Done()
	next := time.Now().Add(k.interval)
	failures := 0
	timer := time.NewTimer(k.interval)
	defer timer.Stop()
	for {
		select {
		case <-k.stop:
			return
		case <-k.kickR:
		case <-timer.C:
		}
		now := time.Now()
		if !now.Before(next) {
			ok := k.round()
			k.lastRound.Store(int64(time.Since(now)))
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
		wake := k.releasePending(next)
		timer.Reset(time.Until(wake))
	}
}

// snapshotRenewable lists the renewable leases, oldest confirmation first.
func (k *Keeper) snapshotRenewable() []*entry {
	k.mu.Lock()
	defer k.mu.Unlock()
	es := make([]*entry, 0, len(k.leases))
	for e := range k.leases {
		if !e.fixed {
			es = append(es, e)
		}
	}
	return es
}

// round renews every renewable lease in batches and reports whether every
// batch got an answer.
func (k *Keeper) round() bool {
	es := k.snapshotRenewable()
	if len(es) == 0 {
		return true
	}
	k.rounds.Add(1)
	ok := true
	size := k.store.BatchSize()
	refs := make([]Ref, 0, min(size, len(es)))
	for start := 0; start < len(es); start += size {
		batch := es[start:min(start+size, len(es))]
		refs = refs[:0]
		k.mu.Lock()
		last := time.Time{}
		for _, e := range batch {
			refs = append(refs, e.ref)
			if e.deadline.After(last) {
				last = e.deadline
			}
		}
		k.mu.Unlock()
		sent := time.Now()
		renewed, err := k.renewBatch(batch, refs, sent, last)
		k.batches.Add(1)
		if err == nil && len(renewed) != len(refs) {
			err = fmt.Errorf("keeper: Store.Renew returned %d results for %d refs", len(renewed), len(refs))
		}
		if err != nil {
			k.failures.Add(1)
			k.lastErr.Store(&err)
			ok = false
			select {
			case <-k.stop:
				return false
			default:
			}
			continue
		}
		k.apply(batch, renewed, sent)
	}
	return ok
}

// errLate is the error of a renewal batch that did not answer in time; its
// answer is still applied if it comes before the batch's deadline.
var errLate = errors.New("keeper: renewal not answered within TTL/2 (a late answer still counts)")

// renewBatch sends one Store.Renew for batch and waits for its answer
// until TTL/2 after sent (never before TTL/3, never past last, the batch's
// last deadline). The request itself may run until last: a slow answer is
// still worth having, since the server extended the leases when it ran the
// request, after sent. Cutting it at the wait instead would also make the
// driver close a pooled connection whose replacement (a TCP and database
// handshake, statement prepares) costs more round trips than the next
// round has, so a server slow but answering would cost every lease. An
// answer that comes after the wait is applied by the goroutine that
// received it, which the keeper owns (Close cancels its request and waits
// for it); meanwhile the next round retries, usually on another
// connection.
func (k *Keeper) renewBatch(batch []*entry, refs []Ref, sent, last time.Time) ([]bool, error) {
	wait := later(sent.Add(k.interval), earlier(last, sent.Add(k.ttl/2)))
	ctx, cancel := context.WithDeadline(k.base, later(wait, last))
	batch, refs = slices.Clone(batch), slices.Clone(refs) // the caller reuses refs
	type result struct {
		renewed []bool
		err     error
	}
	ch := make(chan result, 1)
	var mu sync.Mutex
	abandoned := false
	k.wg.Add(1)
	go func() {
		defer k.wg.Done()
		defer cancel()
		renewed, err := k.store.Renew(ctx, refs, k.ttl)
		if err == nil && len(renewed) != len(refs) {
			err = fmt.Errorf("keeper: Store.Renew returned %d results for %d refs", len(renewed), len(refs))
		}
		mu.Lock()
		defer mu.Unlock()
		if abandoned {
			if err == nil {
				k.apply(batch, renewed, sent)
			}
			return
		}
		ch <- result{renewed, err}
	}()
	t := time.NewTimer(time.Until(wait))
	defer t.Stop()
	select {
	case r := <-ch:
		return r.renewed, r.err
	case <-t.C:
	case <-k.stop:
	}
	mu.Lock()
	defer mu.Unlock()
	select {
	case r := <-ch:
		return r.renewed, r.err
	default:
		abandoned = true
		return nil, errLate
	}
}

// apply records a batch's answers: confirmed leases get a new deadline
// (and Held back if they were Suspended); leases the store reports gone
// are Lost, unless a Release of theirs is in flight.
func (k *Keeper) apply(batch []*entry, renewed []bool, sent time.Time) {
	var lose []*entry
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
			e.suspectAt = sent.Add(k.suspect)
		}
		if e.suspended && time.Now().Before(e.suspectAt) {
			// Under k.mu, like Suspend in check: the flag and the lease's
			// state change together, so a Suspend cannot land after this
			// Resume and stick.
			e.suspended = false
			e.ctl.Resume()
		}
	}
	k.mu.Unlock()
	for _, e := range lose {
		if e.ctl.Lose(fmt.Errorf("%w (%s)", ErrGone, e.ref.Key)) {
			k.lost.Add(1)
		}
	}
	// No watchdog kick: renewals only move events later, and the watchdog
	// recomputes its next wake when it wakes as planned.
}

// releasePending sends the queued releases that are due, in batches, and
// returns when the renewer should wake next (at the latest at next).
func (k *Keeper) releasePending(next time.Time) time.Time {
	now := time.Now()
	k.mu.Lock()
	var due []pendingRelease
	keep := k.pending[:0]
	wake := next
	for _, p := range k.pending {
		switch {
		case now.After(p.until):
			// Expired on the server by now: nothing left to free.
		case now.Before(p.notBef):
			keep = append(keep, p)
			if p.notBef.Before(wake) {
				wake = p.notBef
			}
		default:
			due = append(due, p)
		}
	}
	k.pending = keep
	k.mu.Unlock()

	size := k.store.BatchSize()
	for start := 0; start < len(due); start += size {
		batch := due[start:min(start+size, len(due))]
		refs := make([]Ref, len(batch))
		for i, p := range batch {
			refs[i] = p.ref
		}
		// As for renewals (renewBatch): a slow answer is worth waiting
		// for, and cutting the request closes a pooled connection.
		ctx, cancel := context.WithTimeout(k.base, max(k.interval, k.ttl/2))
		err := k.store.Release(ctx, refs)
		cancel()
		if err == nil {
			k.releases.Add(1)
			continue
		}
		retry := time.Now()
		k.mu.Lock()
		for _, p := range batch {
			p.tries++
			p.notBef = retry.Add(k.backoff.Delay(p.tries))
			if p.notBef.Before(wake) {
				wake = p.notBef
			}
			if !k.closed {
				k.pending = append(k.pending, p)
			}
		}
		k.mu.Unlock()
	}
	return wake
}

// watchdog suspends leases whose renewal is late and loses leases whose
// deadline has come. It sleeps until the earliest such moment.
func (k *Keeper) watchdog() {
	defer k.wg.Done()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		wake := k.check(time.Now())
		timer.Reset(time.Until(wake))
		select {
		case <-k.stop:
			return
		case <-k.kickW:
		case <-timer.C:
		}
	}
}

// check applies suspensions and deadlines due at now and returns the next
// moment one is due.
func (k *Keeper) check(now time.Time) time.Time {
	wake := now.Add(time.Hour)
	var lose []*entry
	k.mu.Lock()
	for e := range k.leases {
		if !now.Before(e.deadline) {
			delete(k.leases, e)
			lose = append(lose, e)
			continue
		}
		if e.deadline.Before(wake) {
			wake = e.deadline
		}
		if e.fixed || e.suspended {
			continue
		}
		if !now.Before(e.suspectAt) {
			e.suspended = true
			e.ctl.Suspend() // under k.mu: see apply
			k.suspended.Add(1)
		} else if e.suspectAt.Before(wake) {
			wake = e.suspectAt
		}
	}
	k.nextWake = wake
	for _, e := range lose {
		if !e.fixed {
			// The row may still be ours on the server until its expiry:
			// free it early (owner-checked) once the store is reachable.
			k.queueLocked(e.ref, now)
		}
	}
	k.mu.Unlock()
	for _, e := range lose {
		cause := ErrDeadline
		if e.fixed {
			cause = ErrFixedExpired
		}
		if e.ctl.Lose(fmt.Errorf("%w (%s)", cause, e.ref.Key)) {
			k.lost.Add(1)
		}
	}
	if len(lose) > 0 {
		kick(k.kickR)
	}
	// The timer's own lateness delays Lost only by scheduling delay, which
	// DriftMargin covers.
	return wake
}
