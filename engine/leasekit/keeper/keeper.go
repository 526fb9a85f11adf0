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
	"github.com/baton-go/baton/clock"
	"github.com/baton-go/baton/engine"
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
	// 0 means max(TTL/10, 100ms), or TTL/4 when that is not below TTL/2.
	// It must be below TTL/2.
	DriftMargin time.Duration
	// Backoff paces retried renewal rounds and queued releases.
	Backoff baton.Backoff
	// Clock is the keeper's time source, for every reading of the time and
	// every timer; nil means clock.Real. Tests pass a *clock.Fake. The send
	// times given to Hold must be readings of the same clock.
	Clock clock.Clock
	// Observer, if set, is told of each renewal batch (EventRenewal): its
	// answer or its failure. A batch not answered in time is reported
	// failed, and again (Late) if its answer comes after all. The Lost
	// events of the leases the keeper ends carry Lead. Engine is
	// Event.Engine ("redis", "sqlite", …). Nil costs nothing.
	Observer baton.Observer
	Engine   string
}

// Stats counts the keeper's work since New, for tests and monitoring.
type Stats struct {
	Held   int    // leases the keeper holds now (renewed or fixed)
	Rounds uint64 // renewal rounds run that had at least one lease to renew
	// RenewBatches counts Store.Renew calls (round trips).
	RenewBatches uint64
	// RenewFailures counts Store.Renew calls that returned an error or were
	// not answered in time.
	RenewFailures uint64
	// LateAnswers counts Store.Renew answers that came after the renewer
	// had stopped waiting for them, and were applied all the same.
	LateAnswers uint64
	// Releases counts Store.Release calls that succeeded: a lease's own
	// release, queued releases, and Close's batches.
	Releases  uint64
	Suspended uint64 // Held → Suspended transitions
	// Lost counts leases the keeper declared Lost by a deadline or a
	// "gone" answer; the leases Close ends are not counted.
	Lost uint64
	// LastRound is how long the last renewal round took. Rounds start
	// every TTL/3: a round near that long means the store is too slow (or
	// its connection pool too small) for the number of leases. Leases
	// turn Suspended sooner, when their own batch is answered more than
	// TTL/6 after it was sent (TTL/3 + TTL/6 after the previous send).
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
	clock    clock.Clock
	ttl      time.Duration
	interval time.Duration // renewal period, TTL/3
	suspect  time.Duration // Suspended after this long without a confirmed renewal
	margin   time.Duration
	backoff  baton.Backoff
	obs      baton.Observer
	engine   string

	stop    chan struct{}   // closed by Close
	base    context.Context // cancelled by Close: in-flight requests end with it
	cancel  context.CancelFunc
	wg      sync.WaitGroup // the renewer, the watchdog, the Renew calls in flight
	closeMu sync.Mutex     // serialises Close

	// renewT and watchT are the renewer's and the watchdog's timers. They
	// are reset only under mu, so that a wake-up asked for by another
	// goroutine (an acquire, an abandoned grant) and the owner's own
	// re-arming cannot overwrite each other.
	renewT, watchT clock.Timer

	mu       sync.Mutex
	closed   bool
	leases   map[*entry]struct{}
	pending  []pendingRelease
	flights  map[*flight]struct{} // store requests whose moments the watchdog keeps
	nextWake time.Time            // when the watchdog wakes next
	checking bool                 // the watchdog is at work; it re-arms watchT when done

	rounds, batches, failures, late, releases, suspended, lost atomic.Uint64
	lastRound                                                  atomic.Int64
	lastErr                                                    atomic.Pointer[error]
}

// entry is one held lease. Its fields are guarded by Keeper.mu.
type entry struct {
	// ref is the lease's Ref, in an array: ref[:] is the batch of its own
	// release, which then costs no allocation.
	ref      [1]Ref
	ctl      engine.Control
	lastSent time.Time // send time of the last confirmed renewal or acquire
	deadline time.Time // Lost at
	// margin is how long after deadline the server may expire the lease:
	// the Lead of a deadline loss.
	margin    time.Duration
	suspectAt time.Time // Suspended at (zero for fixed leases)
	// The flags together, after the rest: an entry stays in its
	// allocation size class.
	fixed     bool // never renewed
	suspended bool
	releasing bool // a Release is in flight: a "gone" answer is expected
}

// pendingRelease is a release queued for the renewer.
type pendingRelease struct {
	ref    Ref
	until  time.Time // give up after (the lease has expired on the server by then)
	notBef time.Time // next attempt not before (zero: at once)
	tries  int       // failed attempts so far
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
		clock:    clock.Or(o.Clock),
		ttl:      o.TTL,
		interval: o.TTL / 3,
		suspect:  o.TTL / 2,
		margin:   o.DriftMargin,
		backoff:  o.Backoff,
		obs:      o.Observer,
		engine:   o.Engine,
		stop:     make(chan struct{}),
		leases:   make(map[*entry]struct{}),
		flights:  make(map[*flight]struct{}),
	}
	k.base, k.cancel = context.WithCancel(context.Background())
	// Both timers are armed before the goroutines start, so the keeper is
	// idle (both timers active) as soon as New returns.
	now := k.clock.Now()
	k.nextWake = now.Add(idleWake)
	k.renewT = k.clock.NewTimer(k.interval)
	k.watchT = k.clock.NewTimer(idleWake)
	k.wg.Add(2)
	go k.renewer(now.Add(k.interval))
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
		LateAnswers:   k.late.Load(),
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
// and keeps it: g is passed to engine.NewLease with Release and OnEnd
// supplied by the keeper (g.OnEnd, if set, still runs). sent is the send
// time of the request that created the grant, taken before sending it on
// the keeper's clock (time.Now() with the default clock; the Fake's Now in
// tests). A fixed > 0 is the lease time of a lease that is never renewed;
// the engine must have created the grant with that lease time.
//
// Hold fails when the keeper is closed (baton.ErrClosed; the grant expires
// by its TTL), and when the grant's deadline has already passed (wrapping
// baton.ErrLost and ErrDeadline: the acquire took so long that the lease
// may have expired); it then queues an owner-checked release of ref.
func (k *Keeper) Hold(parent context.Context, g engine.Grant, ref Ref, sent time.Time, fixed time.Duration) (*baton.Lease, error) {
	e := k.newEntry(ref, sent, fixed)
	// g.OnEnd stays the engine's: every end of a held lease leaves
	// k.leases where it happens (release, apply, check; Close forgets
	// them all), so the keeper needs no hook, which was a closure per
	// grant.
	g.Release = func(ctx context.Context) error { return k.release(ctx, e) }
	lease, ctl := engine.NewLease(parent, g)
	e.ctl = ctl

	k.mu.Lock()
	switch {
	case k.closed:
		k.mu.Unlock()
		ctl.Lose(baton.ErrClosed)
		return nil, fmt.Errorf("keeper: hold %q: %w", ref.Key, baton.ErrClosed)
	case !k.clock.Now().Before(e.deadline):
		k.mu.Unlock()
		k.Abandon(ref)
		ctl.LoseAhead(ErrDeadline, e.deadline.Add(e.margin).Sub(k.clock.Now()))
		return nil, fmt.Errorf("keeper: hold %q: %w: %w", ref.Key, baton.ErrLost, ErrDeadline)
	}
	k.leases[e] = struct{}{}
	first := e.deadline
	if !e.fixed {
		first = e.suspectAt
	}
	// Move the watchdog's wake only when this lease's first event comes
	// before it: a wake is a scan of every lease, and one per acquire
	// would make holding n leases cost O(n²).
	k.wakeWatchdogLocked(first)
	k.mu.Unlock()
	return lease, nil
}

// newEntry computes a new lease's deadlines from its send time.
func (k *Keeper) newEntry(ref Ref, sent time.Time, fixed time.Duration) *entry {
	ttl := k.ttl
	if fixed > 0 {
		ttl = fixed
	}
	margin := min(k.margin, ttl/4) // a short fixed lease keeps most of its time
	e := &entry{ref: [1]Ref{ref}, fixed: fixed > 0, lastSent: sent, deadline: sent.Add(ttl - margin), margin: margin}
	if !e.fixed {
		e.suspectAt = sent.Add(k.suspect)
	}
	return e
}

// Abandon queues an owner-checked release of ref, retried in the
// background until the lease must have expired on the server. Engines call
// it when an acquire's outcome is unknown (its context ended or the
// connection failed mid-request), so a grant nobody will use is freed
// promptly instead of blocking others for a whole TTL. After Close it does
// nothing: the lease expires by its TTL.
func (k *Keeper) Abandon(ref Ref) {
	k.mu.Lock()
	k.queueLocked(ref, k.clock.Now())
	k.mu.Unlock()
}

// queueLocked queues a release of ref and wakes the renewer to send it.
func (k *Keeper) queueLocked(ref Ref, now time.Time) {
	if k.closed {
		return // Close released what it could; the TTL frees the rest
	}
	k.pending = append(k.pending, pendingRelease{ref: ref, until: now.Add(k.ttl + k.interval)})
	k.renewT.Reset(0)
}

// release is the lease's Grant.Release: the owner-checked removal. The
// lease stays renewed while the removal is in flight. A failed removal
// ends the lease (baton.Lease.Release) and queues the removal again, as
// Abandon does: left held, a lease whose release timed out was renewed
// until its process ended, and a PostgreSQL release cut by its deadline
// is cancelled on the server, so it cannot be assumed applied either.
func (k *Keeper) release(ctx context.Context, e *entry) error {
	k.mu.Lock()
	e.releasing = true
	k.mu.Unlock()
	err := k.store.Release(ctx, e.ref[:])
	k.mu.Lock()
	e.releasing = false
	delete(k.leases, e)
	k.mu.Unlock()
	if err == nil {
		k.releases.Add(1)
		return nil
	}
	e.ctl.ReleaseFailed(err) // before the removal can let anyone in
	k.Abandon(e.ref[0])
	return err
}

// Close stops the keeper: every lease it holds ends Lost (cause wrapping
// baton.ErrClosed), then those leases and the queued releases are released
// on the store in batches, each given max(TTL/3, 100ms); leases that
// cannot be released expire on the server by themselves. Later calls
// return an error wrapping baton.ErrClosed.
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
	refs := make([]Ref, 0, len(k.leases)+len(k.pending))
	for e := range k.leases {
		held = append(held, e)
		refs = append(refs, e.ref[0])
	}
	for _, p := range k.pending {
		refs = append(refs, p.ref)
	}
	clear(k.leases) // ended below, by Close
	k.pending = nil
	k.mu.Unlock()

	close(k.stop)
	k.cancel()
	k.wg.Wait()
	for _, e := range held {
		e.ctl.Lose(fmt.Errorf("keeper closed: %w", baton.ErrClosed))
	}
	k.releaseAll(refs)
	return nil
}

// releaseAll is Close's release of refs, with a bounded wait per batch: a
// partitioned store must not hang Close, and its leases expire by their
// TTL. The bound is an AfterFunc of the keeper's clock, not a context
// deadline, so that it passes in virtual time on a Fake.
func (k *Keeper) releaseAll(refs []Ref) {
	for batch := range slices.Chunk(refs, k.store.BatchSize()) {
		ctx, cancel := context.WithCancel(context.Background())
		t := k.clock.AfterFunc(max(k.interval, 100*time.Millisecond), cancel)
		if err := k.store.Release(ctx, batch); err == nil {
			k.releases.Add(1)
		}
		t.Stop()
		cancel()
	}
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
