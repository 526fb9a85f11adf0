package redislock

import (
	"context"
	"fmt"
	"sync"

	"github.com/baton-go/baton"
)

// Semaphore hands out up to N permits. Each permit is a member
// "<owner>:<token>" of a sorted set scored by its expiry on the server's
// clock, renewed by the keeper like any lease: a dead holder's permit
// expires and comes back by itself. Permits are not exclusive (holders
// get distinct, increasing tokens, but a token fences nothing between
// permit holders) and not reentrant.
//
// # N must agree
//
// N is stored on the server beside the permits ("<prefix>:{<name>}:sem:n",
// written by the first holder and kept while any permit is held). Every
// acquire script answers the stored N, so a client configured with another
// N notices at its first attempt and reports it to the function set with
// OnDisagreement (each stored N once per Semaphore); it is not an error,
// so that a rolling change of N does not fail acquires. Each client admits
// by its own N: the one with the larger N lets more holders in than the
// others expect, which is what the report is for.
type Semaphore struct {
	c    *Client
	name string
	k    keys
	n    int

	mu       sync.Mutex
	reported map[int]bool
	report   func(Disagreement)
}

// Disagreement describes permits held under a different N.
type Disagreement struct {
	Name    string // the semaphore
	Key     string // the key storing the N the holders used
	Permits int    // the N stored on the server
	Want    int    // this client's N
}

func (d Disagreement) String() string {
	return fmt.Sprintf("semaphore %q: this client uses N=%d but the permits held were taken with N=%d (%s)", d.Name, d.Want, d.Permits, d.Key)
}

// Semaphore returns the semaphore called name with n permits; n < 1 fails
// with an error wrapping baton.ErrInvalidOption.
func (c *Client) Semaphore(name string, n int) (*Semaphore, error) {
	nm, err := baton.ValidateName(name)
	if err != nil {
		return nil, fmt.Errorf("redislock: Semaphore: %w", err)
	}
	if n < 1 {
		return nil, fmt.Errorf("%w: redislock: semaphore %q needs at least one permit, got %d", baton.ErrInvalidOption, nm, n)
	}
	return &Semaphore{c: c, name: nm, k: c.keysOf(nm), n: n, reported: make(map[int]bool)}, nil
}

// OnDisagreement sets the function told about permits held under another
// N (nil: none). It runs on the acquiring goroutine and must return
// quickly.
func (s *Semaphore) OnDisagreement(f func(Disagreement)) {
	s.mu.Lock()
	s.report = f
	s.mu.Unlock()
}

// Name returns the normalised semaphore name.
func (s *Semaphore) Name() string { return s.name }

// Permits returns this client's N.
func (s *Semaphore) Permits() int { return s.n }

// Acquire blocks until a permit is granted or ctx ends.
func (s *Semaphore) Acquire(ctx context.Context) (*baton.Lease, error) {
	return s.c.acquire(ctx, s.spec(), true, 0)
}

// TryAcquire makes one attempt: baton.ErrNotAcquired when all N permits
// are taken.
func (s *Semaphore) TryAcquire(ctx context.Context) (*baton.Lease, error) {
	return s.c.acquire(ctx, s.spec(), false, 0)
}

// Lock is Acquire, so that a Semaphore is a baton.Locker.
func (s *Semaphore) Lock(ctx context.Context) (*baton.Lease, error) { return s.Acquire(ctx) }

// TryLock is TryAcquire.
func (s *Semaphore) TryLock(ctx context.Context) (*baton.Lease, error) { return s.TryAcquire(ctx) }

func (s *Semaphore) spec() *spec {
	b := s.k.base
	return &spec{
		recipe: "permit", name: s.name,
		script:    acquirePermit,
		keys:      []string{b + sfxSemPermits, b + sfxSemN, b + sfxSemWaiters, s.k.counter},
		detail:    fmt.Sprint(s.n),
		waiters:   b + sfxSemWaiters,
		wake:      s.k.wake,
		zset:      true,
		companion: b + sfxSemN,
		onReply:   s.check,
	}
}

// check reports a stored N other than this client's.
func (s *Semaphore) check(v []any) {
	if len(v) < 3 {
		return
	}
	stored, _ := v[2].(int64)
	if stored == 0 || int(stored) == s.n {
		return
	}
	s.mu.Lock()
	f := s.report
	first := !s.reported[int(stored)]
	s.reported[int(stored)] = true
	s.mu.Unlock()
	if f != nil && first {
		f(Disagreement{Name: s.name, Key: s.k.base + sfxSemN, Permits: int(stored), Want: s.n})
	}
}
