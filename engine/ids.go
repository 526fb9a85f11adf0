package engine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"github.com/baton-go/baton"
)

// FloorToken returns the fencing token of a grant whose engine counter
// reads raw, on a deployment whose token floor is floor: raw + floor (see
// "Token floor" in package baton's doc). A sum past math.MaxUint64 would
// wrap to a small token that every fenced resource rejects as stale, or
// worse, that a fresh resource accepts below tokens already issued; it is
// refused with an error wrapping baton.ErrInvalidOption instead.
func FloorToken(raw, floor uint64) (uint64, error) {
	if raw > math.MaxUint64-floor {
		return 0, fmt.Errorf("baton: token floor %d plus the engine's counter %d overflows uint64 (lower the floor): %w",
			floor, raw, baton.ErrInvalidOption)
	}
	return raw + floor, nil
}

// NewOwnerID returns a random 128-bit identity in hex, for owner values and
// protected-create prefixes.
func NewOwnerID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	return hex.EncodeToString(b[:])
}

var acquireSeq atomic.Uint64

// NextAcquireID returns a process-unique, nonzero ID for
// baton.Event.Acquire, pairing an acquire's events.
func NextAcquireID() uint64 { return acquireSeq.Add(1) }

// Emit tells o of e, stamping e.Time with the current time when it is
// zero. A nil o is told nothing.
func Emit(ctx context.Context, o baton.Observer, e baton.Event) {
	if o == nil {
		return
	}
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	o.Observe(ctx, e)
}
