package leasekit

import (
	"context"
	"fmt"
	"sync"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/engine"
	"github.com/baton-go/baton/engine/queuekit"
)

// Semaphore hands out up to N permits. A permit comes back when its holder
// releases it or its lease expires: a dead holder's permit is free within
// a TTL. Permits are not exclusive: each gets a token of its own, larger
// than every earlier grant's of its counter, but holders hold at once.
// Permits are not reentrant: each Acquire takes one more permit.
//
// # N must agree
//
// The store keeps the N each permit was taken with, and reports what it
// reads of it (Request.Seen). Each N other than this Semaphore's is
// reported once to the function set with OnDisagreement — not returned as
// an error: a rolling change of N must not fail acquires that are
// otherwise fine. The report is the queue engines' Disagreement, so the
// CLI and callers handle every engine's alike.
type Semaphore struct {
	e    *Engine
	name string
	n    int

	mu      sync.Mutex
	checked map[string]bool // IDs judged; pruned to the live ones on a complete report
	report  func(Disagreement)
}

// Disagreement describes permits taken by a client configured with a
// different N.
type Disagreement = queuekit.Disagreement

var _ baton.Locker = (*Semaphore)(nil)

// Semaphore returns the semaphore called name with n permits. n < 1 fails
// with an error wrapping baton.ErrInvalidOption, an invalid name with one
// wrapping baton.ErrInvalidName.
func (e *Engine) Semaphore(name string, n int) (*Semaphore, error) {
	nm, err := engine.ValidateName(name)
	if err != nil {
		return nil, fmt.Errorf("%s: Semaphore: %w", e.Pkg, err)
	}
	if n < 1 {
		return nil, Invalid(e.Pkg, "semaphore %q needs at least one permit, got %d", nm, n)
	}
	return &Semaphore{e: e, name: nm, n: n, checked: make(map[string]bool)}, nil
}

// Name returns the normalised semaphore name.
func (s *Semaphore) Name() string { return s.name }

// Permits returns this client's N.
func (s *Semaphore) Permits() int { return s.n }

// OnDisagreement sets the function told about permits taken with another
// N (nil: none). It runs on the acquiring goroutine, so it must return
// quickly.
func (s *Semaphore) OnDisagreement(f func(Disagreement)) {
	s.mu.Lock()
	s.report = f
	s.mu.Unlock()
}

// Acquire blocks until a permit is granted or ctx ends.
func (s *Semaphore) Acquire(ctx context.Context) (*baton.Lease, error) { return s.acquire(ctx, true) }

// TryAcquire makes one attempt; baton.ErrNotAcquired when all permits are
// taken (or promised to waiters).
func (s *Semaphore) TryAcquire(ctx context.Context) (*baton.Lease, error) {
	return s.acquire(ctx, false)
}

// Lock is Acquire, so that a Semaphore is a baton.Locker.
func (s *Semaphore) Lock(ctx context.Context) (*baton.Lease, error) { return s.Acquire(ctx) }

// TryLock is TryAcquire.
func (s *Semaphore) TryLock(ctx context.Context) (*baton.Lease, error) { return s.TryAcquire(ctx) }

func (s *Semaphore) acquire(ctx context.Context, wait bool) (*baton.Lease, error) {
	return s.e.Acquire(ctx, nil, Request{Name: s.name, Kind: KindPermit, Wait: wait, N: s.n, Seen: s.seen})
}

// seen judges the N of held that were not judged yet and reports those
// that differ; complete means held is every live holder, so the IDs no
// longer live are forgotten.
func (s *Semaphore) seen(held []Permits, complete bool) {
	s.mu.Lock()
	live := make(map[string]bool, len(held))
	var report []Disagreement
	for _, p := range held {
		live[p.ID] = true
		if s.checked[p.ID] {
			continue
		}
		s.checked[p.ID] = true
		if p.N > 0 && p.N != s.n && s.report != nil {
			report = append(report, Disagreement{Name: s.name, Lease: p.Lease, Permits: p.N, Want: s.n})
		}
	}
	if complete {
		for id := range s.checked {
			if !live[id] {
				delete(s.checked, id)
			}
		}
	}
	f := s.report
	s.mu.Unlock()
	for _, d := range report {
		f(d)
	}
}
