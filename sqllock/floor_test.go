package sqllock_test

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/sqllock"
)

// TestTokenFloor: a client with TokenFloor F hands out raw + F, raw being
// the value of the token source a client without a floor reads on the
// same table; the source itself is not raised, and a floor that would
// overflow uint64 fails the acquire with baton.ErrInvalidOption and
// leaves the lock free.
func TestTokenFloor(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			db, _ := b.open(t, false)
			// A prefix of its own: no other test advances this token source.
			const prefix, floor = "baton_tokfloor_", uint64(1_000_000_000_000)
			plain := newClient(t, db, sqllock.Options{TablePrefix: prefix})
			floored := newClient(t, db, sqllock.Options{TablePrefix: prefix, TokenFloor: floor})
			name := uniqueName("floor")
			var got [3]uint64
			for i, c := range []*baton.Client{plain, floored, plain} {
				l := lock(t, c, name)
				got[i] = l.Token()
				if err := l.Release(opCtx(t, 5*time.Second)); err != nil {
					t.Fatalf("Release = %v", err)
				}
			}
			// Each grant is one uncontended attempt, which advances the
			// source by the same step: 1, or 2 on PostgreSQL (the upsert's
			// VALUES spends one).
			raw := [3]uint64{got[0], got[1] - floor, got[2]}
			if step := raw[1] - raw[0]; got[1] < floor || step < 1 || step > 2 {
				t.Errorf("token with TokenFloor %d after raw token %d = %d, want raw + floor (a raw step of 1 or 2)", floor, got[0], got[1])
			} else if raw[2]-raw[1] != step {
				t.Errorf("token without a floor after the floored grant = %d, want %d (the source is not raised)", got[2], raw[1]+step)
			}

			over := newClient(t, db, sqllock.Options{TablePrefix: prefix, TokenFloor: math.MaxUint64})
			m, _ := over.Mutex(name)
			if l, err := m.TryLock(opCtx(t, 5*time.Second)); !errors.Is(err, baton.ErrInvalidOption) {
				t.Errorf("TryLock with TokenFloor MaxUint64 = %v, %v, want an error wrapping %v", l, err, baton.ErrInvalidOption)
			}
			// The refused grant is released in the background, well
			// within the TTL.
			pm, _ := plain.Mutex(name)
			l, err := pm.Lock(opCtx(t, sqllock.DefaultTTL/3))
			if err != nil {
				t.Fatalf("Lock after the overflowing grant = %v, want it released", err)
			}
			_ = l.Release(context.Background())
		})
	}
}
