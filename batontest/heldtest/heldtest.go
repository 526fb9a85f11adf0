// Package heldtest holds the helpers of the engines' held-lease tests
// (many leases on one session): a goroutine count that ignores goroutines
// on their way out, and a check of every lease's state. It imports only
// the standard library and baton, so every engine module's tests can use
// it without new requirements.
package heldtest

import (
	"math"
	"runtime"
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
