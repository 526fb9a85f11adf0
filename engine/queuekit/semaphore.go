package queuekit

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/engine"
)

// Semaphore hands out up to N permits. On an engine whose session is a
// PermitSession (etcd) the permits are the first N lease entries by order,
// with no guard (see PermitSession). Elsewhere (ZooKeeper) it runs Curator's
// InterProcessSemaphoreV2 protocol and layout so Java and Go clients share
// permits: a short guard mutex under "<name>/locks" admits one acquirer at a
// time; it creates its lease entry under "<name>/leases" and is granted as
// soon as the directory holds at most N leases, waiting for any change of
// the directory otherwise; then it releases the guard. Only the guard's
// holder watches the lease directory, and the guard itself is a fair
// mutex, so a released permit wakes one client, not the herd. Because only
// the guard's holder can have a lease that is not granted, the granted
// leases are always the first ones by sequence, as in the other protocol.
//
// A permit comes back when its holder releases it or its session dies.
// Permits are not exclusive, so permit holders may share a token. Permits
// are not reentrant: each Acquire takes one more permit.
//
// # N must agree
//
// Curator does not store N: every client must be configured with the same
// N, and one with a larger N lets more holders in than the others expect.
// baton stores its N with each lease ("baton:permits=3" as the znode's data
// or in the etcd value, see PermitsData) and reads the N of the leases it
// has not checked yet (one read per lease per Semaphore, all at once)
// whenever an acquirer finds the permits taken (it has to wait, or
// TryAcquire gives up) and, under V2 (ZooKeeper), whenever a grant's read
// shows other leases: after the guard is released, so the other acquirers
// do not wait for it. So with one permit of N=1 held, a client configured
// with N=1000 is told at its first grant, and a client with a smaller N
// when it finds more leases than it allows. With a PermitSession (etcd)
// a grant whose create counted other leases reads their keys once (a
// serializable read, no quorum round) and judges them too. An acquire of
// an empty semaphore reads nothing.
//
// A lease taken with another N is reported to the function set with
// OnDisagreement — not returned as an error: whether a check runs depends
// on who holds at that moment, so an error would come and go with the
// load, and a rolling change of N would fail acquires that are otherwise
// fine. No stored N wins: each client admits by its own N, as Curator's
// clients (which store none) must, so that Java and Go clients keep one
// rule. Leases whose data is not baton's (Curator writes the client's IP
// address by default) are not judged.
type Semaphore struct {
	guard  recipe
	leases recipe
	n      int

	mu      sync.Mutex
	checked map[string]bool // lease IDs whose N was read, pruned to the live ones
	report  func(Disagreement)
}

// Disagreement describes a lease taken by a baton client configured with a
// different N.
type Disagreement struct {
	Name    string // the semaphore
	Lease   string // the lease entry's key or path
	Permits int    // the N that lease was taken with
	Want    int    // this client's N
}

func (d Disagreement) String() string {
	return fmt.Sprintf("semaphore %q: this client uses N=%d but lease %s was taken with N=%d", d.Name, d.Want, d.Lease, d.Permits)
}

// permitsPrefix starts the data baton stores with a lease.
const permitsPrefix = "baton:permits="

// PermitsData returns the data baton stores with a lease of a semaphore
// with n permits.
func PermitsData(n int) []byte { return []byte(permitsPrefix + strconv.Itoa(n)) }

// ParsePermits reads the N out of a lease's data; ok is false for data
// baton did not write (a Curator lease, for example).
func ParsePermits(data []byte) (n int, ok bool) {
	rest, ok := strings.CutPrefix(string(data), permitsPrefix)
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	if err != nil || n < 1 {
		return 0, false
	}
	return n, true
}

// GuardReleaseTimeout bounds the release of the guard mutex after an
// acquire, so an unreachable server cannot hold the acquire past it; the
// guard's entry then belongs to the session's cleanup.
const GuardReleaseTimeout = 5 * time.Second

// NewSemaphore returns the semaphore called name with n permits on b.
func NewSemaphore(b Backend, name string, n int, opts MutexOptions) (*Semaphore, error) {
	nm, err := engine.ValidateName(name)
	if err != nil {
		return nil, err
	}
	if n < 1 {
		return nil, fmt.Errorf("%w: semaphore %q needs at least one permit, got %d", baton.ErrInvalidOption, nm, n)
	}
	s := &Semaphore{n: n, checked: make(map[string]bool)}
	s.guard = recipe{b: b, name: nm, dir: nm + "/locks", kind: KindMutex, rule: first, before: true, handOff: true}
	s.leases = recipe{b: b, name: nm, dir: nm + "/leases", kind: KindLease, rule: s.rule,
		data: PermitsData(n), beforeWait: s.check}
	s.leases.observe(opts, "semaphore")
	return s, nil
}

// OnDisagreement sets the function told about leases taken with another N
// (nil: none). It runs on the acquiring goroutine (under V2, when the
// acquire must wait while it holds the guard mutex), so it must return
// quickly; each lease is reported once per Semaphore.
func (s *Semaphore) OnDisagreement(f func(Disagreement)) {
	s.mu.Lock()
	s.report = f
	s.mu.Unlock()
}

// check reads the N of every lease in snap not read before and reports
// those that differ. It runs when the acquirer must wait and, under V2,
// after a grant that read other leases, so an acquire of an empty
// semaphore pays nothing; read errors are ignored (the check is a
// diagnosis, and the wait that follows surfaces real failures).
func (s *Semaphore) check(ctx context.Context, sess Session, snap Snapshot) {
	ds, ok := sess.(DataSession)
	if !ok {
		return
	}
	s.mu.Lock()
	live := make(map[string]bool, len(snap.Entries))
	var todo []Entry
	for i, e := range snap.Entries {
		live[e.id()] = true
		if i != snap.Own && !s.checked[e.id()] {
			todo = append(todo, e)
		}
	}
	for id := range s.checked {
		if !live[id] {
			delete(s.checked, id)
		}
	}
	s.mu.Unlock()
	// One round trip for all: a client joining a semaphore of many
	// holders reads every lease at its first acquire.
	reads := make([]struct {
		data []byte
		err  error
	}, len(todo))
	var wg sync.WaitGroup
	for i, e := range todo {
		wg.Go(func() {
			var ok bool
			if reads[i].data, ok, reads[i].err = ds.Data(ctx, e); !ok {
				reads[i].data = nil
			}
		})
	}
	wg.Wait()
	for i, e := range todo {
		if reads[i].err != nil {
			continue // not marked checked: read again at the next check
		}
		s.mu.Lock()
		s.checked[e.id()] = true
		report := s.report
		s.mu.Unlock()
		if m, mine := ParsePermits(reads[i].data); mine && m != s.n && report != nil {
			report(Disagreement{Name: s.leases.name, Lease: e.Key, Permits: m, Want: s.n})
		}
	}
}

// Name returns the normalised semaphore name.
func (s *Semaphore) Name() string { return s.leases.name }

// Permits returns N.
func (s *Semaphore) Permits() int { return s.n }

// Acquire blocks until a permit is granted or ctx ends.
func (s *Semaphore) Acquire(ctx context.Context) (*baton.Lease, error) { return s.acquire(ctx, true) }

// TryAcquire makes one attempt; it returns baton.ErrNotAcquired when all
// permits are taken. It may still wait for the guard mutex, which is held
// only for the short time of another acquire.
func (s *Semaphore) TryAcquire(ctx context.Context) (*baton.Lease, error) {
	return s.acquire(ctx, false)
}

// Lock and TryLock make the semaphore a baton.Locker (one permit each).
func (s *Semaphore) Lock(ctx context.Context) (*baton.Lease, error)    { return s.Acquire(ctx) }
func (s *Semaphore) TryLock(ctx context.Context) (*baton.Lease, error) { return s.TryAcquire(ctx) }

var _ baton.Locker = (*Semaphore)(nil)

// acquire takes the guard, then a permit. With an Observer, the permit's
// acquire is reported from before the guard, so its Wait counts both.
func (s *Semaphore) acquire(ctx context.Context, wait bool) (*baton.Lease, error) {
	var t *track
	if s.leases.obs != nil {
		t, ctx = s.leases.begin(ctx)
	}
	l, err := s.permit(ctx, wait, t)
	t.End(ctx, l, err)
	return l, err
}

// permit takes a permit: as the first N entries by order where the
// engine's session is a PermitSession, else with the guard of Curator's V2
// protocol.
func (s *Semaphore) permit(ctx context.Context, wait bool, t *track) (*baton.Lease, error) {
	if err := ctx.Err(); err != nil {
		return nil, s.leases.errf("%w", err)
	}
	sess, err := s.leases.b.Session(ctx, s.leases.dir)
	if err != nil {
		return nil, s.leases.errf("%w", err)
	}
	if ps, ok := sess.(PermitSession); ok {
		return s.firstN(ctx, sess, ps, wait, t)
	}
	s.leases.b.Done(sess, s.leases.dir)
	l, snap, err := s.v2(ctx, wait, t)
	if l != nil && len(snap.Entries) > 1 {
		s.checkGranted(ctx, snap)
	}
	return l, err
}

// v2 takes a permit under Curator's guard mutex, and returns with it the
// read that granted it.
func (s *Semaphore) v2(ctx context.Context, wait bool, t *track) (*baton.Lease, Snapshot, error) {
	g, err := s.guard.acquire(ctx, true)
	if err != nil {
		return nil, Snapshot{}, err
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), GuardReleaseTimeout)
		defer cancel()
		_ = g.Release(rctx) // handOff: a failed delete goes to the session's cleanup
	}()
	var granted Snapshot
	r := s.leases // this acquire's copy, whose rule keeps the granting read
	r.rule = func(snap Snapshot) (int, bool) {
		blocker, ok := s.rule(snap)
		if ok {
			granted = snap
		}
		return blocker, ok
	}
	l, err := r.run(ctx, wait, t)
	return l, granted, err
}

// checkGranted judges the N of the other leases of the read that granted
// a permit, after the guard is released: a client whose N lets it in past
// leases taken with a smaller one is told too, not only the one that must
// wait (see "N must agree").
func (s *Semaphore) checkGranted(ctx context.Context, snap Snapshot) {
	sess, err := s.leases.b.Session(ctx, s.leases.dir)
	if err != nil {
		return
	}
	defer s.leases.b.Done(sess, s.leases.dir)
	s.check(ctx, sess, snap)
}

// rule grants while the lease directory holds at most N entries, counting
// the caller's own; otherwise the caller waits for any change.
func (s *Semaphore) rule(snap Snapshot) (int, bool) {
	if len(snap.Entries) <= s.n {
		return 0, true
	}
	return -1, false
}
