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
	"testing"
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

// loopOps is how many lock+unlock CheckLockLoop runs.
const loopOps = 200

// CheckLockLoop fails t when loopOps lock+unlock of m under ctx start more
// than loopOps/20 goroutines: an uncontended lock+unlock should start
// none (the peers' do not), and a goroutine per call, started on a small
// stack that the client library's call path grows by copying, cost a
// sixth of some engines' CPU. The few allowed are what a client starts
// now and then (a pool's worker, a timer's).
func CheckLockLoop(t testing.TB, ctx context.Context, m baton.Locker) {
	t.Helper()
	g, err := goroutinesStarted(ctx, m, loopOps)
	if err != nil || g > loopOps/20 {
		t.Errorf("%d lock+unlock started %d goroutines (error %v), want at most %d", loopOps, g, err, loopOps/20)
	}
}

// goroutinesStarted counts the goroutines the process starts during n
// lock+unlock of m under ctx, after one uncounted lock+unlock (which may
// start what a client starts once: a session, its keepalive).
func goroutinesStarted(ctx context.Context, m baton.Locker, n int) (uint64, error) {
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
