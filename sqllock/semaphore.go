package sqllock

import (
	"context"
	"fmt"
	"strconv"
	"sync"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/queue"
)

// Semaphore hands out up to N permits, one row each (kind "permit") among
// the rows of its name (see recipe.go). A permit comes back when its
// holder releases it or its lease expires: a dead holder's permit is free
// within a TTL. Waiters keep an intent row ("swait") and are served in
// the order they started waiting: a permit is granted when the live
// permits plus the waiters ahead of the caller number fewer than N, so a
// newcomer cannot overtake a waiter when a permit frees up.
//
// Permits are not exclusive: each gets a token of its own, larger than
// every earlier grant's of the name, but holders hold at once. Permits are
// not reentrant: each Acquire takes one more permit.
//
// # N must agree
//
// Every permit and intent row stores the N it was taken with ("baton:
// permits=3", queue.PermitsData). Whenever an attempt is refused (the
// caller must wait, or TryAcquire gives up), the rows it read are checked
// against this client's N, and each row taken with another N is reported
// once to the function set with OnDisagreement — not returned as an error,
// as on the queue engines: the check only runs under contention, so an
// error would come and go with the load. The client with the smaller N is
// the one that notices.
type Semaphore struct {
	c *Client
	r recipe
	n int

	mu      sync.Mutex
	checked map[string]bool // owners whose N was judged, pruned to the live ones
	report  func(Disagreement)
}

// Disagreement describes a permit or waiter row taken by a client
// configured with a different N. It is queue's type: the CLI and callers
// handle both engines' reports alike.
type Disagreement = queue.Disagreement

var _ baton.Locker = (*Semaphore)(nil)

// Semaphore returns the semaphore called name with n permits. n < 1 fails
// with an error wrapping baton.ErrInvalidOption, an invalid name with one
// wrapping baton.ErrInvalidName.
func (c *Client) Semaphore(name string, n int) (*Semaphore, error) {
	nm, err := baton.ValidateName(name)
	if err != nil {
		return nil, fmt.Errorf("sqllock: Semaphore: %w", err)
	}
	if n < 1 {
		return nil, fmt.Errorf("%w: sqllock: semaphore %q needs at least one permit, got %d", baton.ErrInvalidOption, nm, n)
	}
	s := &Semaphore{c: c, n: n, checked: make(map[string]bool)}
	s.r = recipe{name: nm, what: "semaphore", kind: kindPermit, waitKind: kindPermitWait,
		data: string(queue.PermitsData(n)), grant: s.grant, refused: s.check}
	return s, nil
}

// Name returns the normalised semaphore name.
func (s *Semaphore) Name() string { return s.r.name }

// Permits returns N.
func (s *Semaphore) Permits() int { return s.n }

// OnDisagreement sets the function told about rows taken with another N
// (nil: none). It runs on the acquiring goroutine, so it must return
// quickly; each row is reported once per Semaphore.
func (s *Semaphore) OnDisagreement(f func(Disagreement)) {
	s.mu.Lock()
	s.report = f
	s.mu.Unlock()
}

// Acquire blocks until a permit is granted or ctx ends.
func (s *Semaphore) Acquire(ctx context.Context) (*baton.Lease, error) {
	return s.c.acquireRecipe(ctx, &s.r, true)
}

// TryAcquire makes one attempt; baton.ErrNotAcquired when all permits are
// taken (or promised to waiters).
func (s *Semaphore) TryAcquire(ctx context.Context) (*baton.Lease, error) {
	return s.c.acquireRecipe(ctx, &s.r, false)
}

// Lock and TryLock make the semaphore a baton.Locker (one permit each).
func (s *Semaphore) Lock(ctx context.Context) (*baton.Lease, error)    { return s.Acquire(ctx) }
func (s *Semaphore) TryLock(ctx context.Context) (*baton.Lease, error) { return s.TryAcquire(ctx) }

// grant counts the live holders (permits, and any foreign row, which
// counts as one) and the waiters ahead of the caller's ticket (all of them
// while it has none).
func (s *Semaphore) grant(others []recipeRow, ticket uint64) bool {
	taken := 0
	for _, o := range others {
		if o.kind != kindPermitWait || ticket == 0 || o.token < ticket {
			taken++
		}
	}
	return taken < s.n
}

// check reports the rows, among others, taken with another N.
func (s *Semaphore) check(others []recipeRow) {
	s.mu.Lock()
	live := make(map[string]bool, len(others))
	var report []Disagreement
	for _, o := range others {
		live[o.owner] = true
		if s.checked[o.owner] || (o.kind != kindPermit && o.kind != kindPermitWait) {
			continue
		}
		s.checked[o.owner] = true
		if m, ok := queue.ParsePermits([]byte(o.data)); ok && m != s.n && s.report != nil {
			report = append(report, Disagreement{Name: s.r.name, Lease: s.r.name + "/" + strconv.FormatInt(o.slot, 10) + "/" + o.owner, Permits: m, Want: s.n})
		}
	}
	for k := range s.checked {
		if !live[k] {
			delete(s.checked, k)
		}
	}
	f := s.report
	s.mu.Unlock()
	for _, d := range report {
		f(d)
	}
}
