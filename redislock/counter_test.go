package redislock_test

import (
	"context"
	"errors"
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/redislock"
)

// TestCounterOutOfRange: the acquire scripts mint tokens with Lua numbers
// (doubles), exact only up to 2^53, and a negative counter would mint
// tokens ≤ 0. A counter SET to -1, to 2^53, to the int64 limit (where
// INCR itself fails) or to a non-number makes every recipe's acquire fail
// at once with ErrBadCounter: nothing granted, the counter untouched.
// At 2^53-1 the next grant gets exactly 2^53, and the one after is
// refused.
func TestCounterOutOfRange(t *testing.T) {
	rdb := redisClient(t, redisAddr(t))
	prefix := testPrefix(t, rdb)
	c := newClient(t, rdb, redislock.Options{Prefix: prefix})
	name := "counter"
	counter := prefix + ":tokens:{" + redislock.SlotTag(redislock.SlotOf(redislock.EscapeName(name))) + "}"
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	m, _ := c.Mutex(name)
	rw, _ := c.RWMutex(name)
	sem, _ := c.Semaphore(name, 2)
	el, _ := c.Election(name)
	acquires := map[string]func(context.Context) (*baton.Lease, error){
		"Mutex.TryLock":        m.TryLock,
		"RWMutex.TryLock":      rw.TryLock,
		"RWMutex.TryRLock":     rw.TryRLock,
		"Semaphore.TryAcquire": sem.TryAcquire,
		"Mutex.Lock":           m.Lock,
		"Semaphore.Acquire":    sem.Acquire,
		"Election (Campaign)":  func(ctx context.Context) (*baton.Lease, error) { l, err := el.Campaign(ctx); return leaseOf(l), err },
	}
	for _, bad := range []string{"-1", "9007199254740992", "-9007199254740993", "9223372036854775807", "x"} {
		if err := rdb.Set(ctx, counter, bad, 0).Err(); err != nil {
			t.Fatalf("SET %s %s = %v", counter, bad, err)
		}
		for what, acquire := range acquires {
			actx, acancel := context.WithTimeout(ctx, 3*time.Second)
			l, err := acquire(actx)
			acancel()
			if !errors.Is(err, redislock.ErrBadCounter) || l != nil {
				t.Errorf("counter %s: %s = (lease %v, %v), want no lease and an error wrapping ErrBadCounter", bad, what, l != nil, err)
				if l != nil {
					_ = l.Release(ctx)
				}
			}
		}
		if got, err := rdb.Get(ctx, counter).Result(); err != nil || got != bad {
			t.Errorf("counter after the refusals = %q, %v, want %q untouched", got, err, bad)
		}
		if es, err := redislock.Entries(ctx, c, name); err != nil || len(es) != 0 {
			t.Errorf("Entries(%q) after the refusals = %q, %v, want none", name, es, err)
		}
	}

	const last = 1<<53 - 1
	if err := rdb.Set(ctx, counter, strconv.FormatInt(last, 10), 0).Err(); err != nil {
		t.Fatalf("SET %s = %v", counter, err)
	}
	l, err := m.TryLock(ctx)
	if err != nil || l.Token() != 1<<53 {
		t.Fatalf("TryLock with the counter at 2^53-1 = %v, %v, want token 2^53 = %d", l, err, uint64(1)<<53)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatalf("Release = %v", err)
	}
	if l, err := m.TryLock(ctx); !errors.Is(err, redislock.ErrBadCounter) {
		t.Errorf("TryLock with the counter at 2^53 = %v, %v, want ErrBadCounter", l, err)
	}
}

func leaseOf(l *baton.Leader) *baton.Lease {
	if l == nil {
		return nil
	}
	return l.Lease()
}

// TestTokenFloorEdge: with the counter at a known value and TokenFloor
// near 2^64, the grant whose sum is exactly MaxUint64 is handed out, the
// next one (which would wrap to 0) is refused with ErrInvalidOption and
// released, Inspect refuses to show a wrapped token, and the counter
// just goes on counting.
func TestTokenFloorEdge(t *testing.T) {
	rdb := redisClient(t, redisAddr(t))
	prefix := testPrefix(t, rdb)
	const raw = 41
	floored := newClient(t, rdb, redislock.Options{Prefix: prefix, TokenFloor: math.MaxUint64 - (raw + 1)})
	plain := newClient(t, rdb, redislock.Options{Prefix: prefix})
	name := "edge"
	counter := prefix + ":tokens:{" + redislock.SlotTag(redislock.SlotOf(redislock.EscapeName(name))) + "}"
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := rdb.Set(ctx, counter, raw, 0).Err(); err != nil {
		t.Fatalf("SET %s = %v", counter, err)
	}
	m, _ := floored.Mutex(name)
	l, err := m.TryLock(ctx)
	if err != nil || l.Token() != math.MaxUint64 {
		t.Fatalf("TryLock with raw %d + floor = %v, %v, want token MaxUint64", raw+1, l, err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatalf("Release = %v", err)
	}
	if l, err := m.TryLock(ctx); !errors.Is(err, baton.ErrInvalidOption) {
		t.Errorf("TryLock with raw %d + floor (past MaxUint64) = %v, %v, want ErrInvalidOption", raw+2, l, err)
	}
	pm, _ := plain.Mutex(name)
	// The refused grant was released; if that release is still on its
	// way, Lock's first attempt is refused and draws a token it does not
	// use (see acquireMutex), so the grant's token is raw+3 or above.
	held, err := pm.Lock(opCtx(t, 5*time.Second))
	if err != nil || held.Token() < raw+3 || held.Token() > raw+4 {
		t.Fatalf("Lock without a floor after the refusal = %v, %v, want token %d (or %d)", held, err, raw+3, raw+4)
	}
	defer held.Release(context.Background())
	if in, err := floored.Inspect(ctx, name); !errors.Is(err, baton.ErrInvalidOption) {
		t.Errorf("Inspect through the floored client = %+v, %v, want ErrInvalidOption (the sum overflows)", in, err)
	}
}
