// Package heldtest holds the helpers of the engines' held-lease tests
// (many leases on one session): a goroutine count that ignores goroutines
// on their way out, a count of the goroutines a lock loop starts, and a
// check of every lease's state. It imports only the standard library and
// baton, so every engine module's tests can use it without new
// requirements.
package heldtest

import (
	"context"
	"math"
	"runtime"
	"runtime/metrics"
	"time"

	"github.com/baton-go/baton"
)

// SettledGoroutines is the lowest goroutine count of a few looks:
// goroutines that are ending (a call's, a watch's, a keepalive's) settle
// in a few ms.
func SettledGoroutines() int {
	g := math.MaxInt
	for range 5 {
		time.Sleep(20 * time.Millisecond)
		g = min(g, runtime.NumGoroutine())
	}
	return g
}

// AllIn reports whether every lease is in state st.
func AllIn(leases []*baton.Lease, st baton.State) func() bool {
	return func() bool {
		for _, l := range leases {
			if l.State() != st {
				return false
			}
		}
		return true
	}
}

// GoroutinesStarted counts the goroutines the process starts during n
// lock+unlock of m under ctx, after one uncounted lock+unlock (which may
// start what a client starts once: a session, its keepalive).
func GoroutinesStarted(ctx context.Context, m baton.Locker, n int) (uint64, error) {
	s := []metrics.Sample{{Name: "/sched/goroutines-created:goroutines"}}
	var g0 uint64
	for i := range n + 1 {
		if i == 1 {
			metrics.Read(s)
			g0 = s[0].Value.Uint64()
		}
		l, err := m.Lock(ctx)
		if err != nil {
			return 0, err
		}
		if err := l.Release(ctx); err != nil {
			return 0, err
		}
	}
	metrics.Read(s)
	return s[0].Value.Uint64() - g0, nil
}
