package kubelock

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/baton-go/baton/engine/leasekit"
	"github.com/baton-go/baton/engine/leasekit/keeper"
)

// store is the keeper.Store and the leasekit.Store of a Client. A
// keeper.Ref's Key is the lock name, its Owner the grant's (or a waiter's)
// owner; Renew and Release touch only entries of that owner.
type store struct{ c *Client }

var (
	_ keeper.Store     = (*store)(nil)
	_ leasekit.Store   = (*store)(nil)
	_ leasekit.Watcher = (*store)(nil)
	_ leasekit.Leaders = (*store)(nil)
)

func (s *store) BatchSize() int { return s.c.o.BatchSize }

// Renew bumps the Stamp of each ref's holder entry (and the spec's
// renewTime), one conditional update per Lease, Parallel Leases at once.
// A ref whose entry is gone — released, or lost to a writer who judged it
// expired (another baton client, a client-go LeaderElector) — is not
// renewed, which is final. Expired entries of others, as this client
// judges them, are dropped in the same write.
func (s *store) Renew(ctx context.Context, refs []keeper.Ref, _ time.Duration) ([]bool, error) {
	renewed := make([]bool, len(refs))
	err := s.c.eachLock(ctx, refs, func(ctx context.Context, lock string, idx []int) error {
		return s.c.modify(ctx, lock, 0, nil, func(v *view, seen *seen, now time.Time) (bool, error) {
			mine := make(map[string]bool, len(idx))
			any := false
			for _, i := range idx {
				renewed[i] = false
				if j := find(v.st.Holders, refs[i].Owner); j >= 0 {
					v.st.Holders[j].Stamp++
					renewed[i], any, mine[refs[i].Owner] = true, true, true
				}
			}
			if any {
				v.touched = true
				v.prune(seen, now, mine)
			}
			return any, nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("kubelock: renew: %w", err)
	}
	return renewed, nil
}

// Release removes each ref's entries (holder or waiting intent),
// owner-checked: a ref whose entries are gone changes nothing. A freed
// holder leaves the spec as client-go's release does (see project).
func (s *store) Release(ctx context.Context, refs []keeper.Ref) error {
	err := s.c.eachLock(ctx, refs, func(ctx context.Context, lock string, idx []int) error {
		err := s.c.modify(ctx, lock, 0, nil, func(v *view, _ *seen, _ time.Time) (bool, error) {
			changed := false
			for _, i := range idx {
				changed = v.drop(refs[i].Owner) || changed
			}
			return changed, nil
		})
		if err == nil {
			s.c.hub.wake(lock, true)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("kubelock: release: %w", err)
	}
	return nil
}

// eachLock runs f once per lock name among refs, with the indexes of its
// refs, Parallel names at once, and returns the first error.
func (c *Client) eachLock(ctx context.Context, refs []keeper.Ref, f func(ctx context.Context, lock string, idx []int) error) error {
	byLock := make(map[string][]int)
	var order []string
	for i, r := range refs {
		if _, ok := byLock[r.Key]; !ok {
			order = append(order, r.Key)
		}
		byLock[r.Key] = append(byLock[r.Key], i)
	}
	if len(order) == 1 {
		return f(ctx, order[0], byLock[order[0]])
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
		slots = make(chan struct{}, c.o.Parallel)
	)
	for _, lock := range order {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			if err := f(ctx, lock, byLock[lock]); err != nil {
				mu.Lock()
				if first == nil {
					first = err
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return first
}

// prune drops the entries of v that expired as this client judges them
// (observe.go), except keep's; a dropped holder changes the spec.
func (v *view) prune(seen *seen, now time.Time, keep map[string]bool) {
	live := func(list []entry) []entry {
		out := list[:0]
		for _, e := range list {
			if keep[e.Owner] || now.Before(seen.expiry(&e, now)) {
				out = append(out, e)
			}
		}
		return out
	}
	n := len(v.st.Holders)
	v.st.Holders = live(v.st.Holders)
	v.st.Waiters = live(v.st.Waiters)
	if len(v.st.Holders) != n {
		v.touched = true
	}
}

// Watch wakes at the next change of name's holders (watch.go): a grant
// or a release, for Election.Observe.
func (s *store) Watch(name string) (<-chan struct{}, func()) { return s.c.hub.watch(name, true) }
