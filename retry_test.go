package baton_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/baton-go/baton"
)

func TestBackoffDelay(t *testing.T) {
	for _, r := range []float64{0, 0.5, 0.999} {
		b := baton.Backoff{Base: 10 * time.Millisecond, Max: 80 * time.Millisecond, Rand: func() float64 { return r }}
		for attempt := 0; attempt < 10; attempt++ {
			step := 10 * time.Millisecond << attempt
			if step > 80*time.Millisecond {
				step = 80 * time.Millisecond
			}
			d := b.Delay(attempt)
			if d < step/10 || d > step {
				t.Errorf("Delay(%d) with rand %v = %v, want within [%v, %v]", attempt, r, d, step/10, step)
			}
		}
	}
}

func TestBackoffRetry(t *testing.T) {
	transient := errors.New("transient")
	permanent := errors.New("permanent")
	b := baton.Backoff{Base: time.Millisecond, Max: 2 * time.Millisecond}
	n := 0
	err := b.Retry(context.Background(), func(err error) bool { return err == transient }, func(context.Context) error {
		n++
		if n < 3 {
			return transient
		}
		return nil
	})
	if err != nil || n != 3 {
		t.Errorf("Retry = %v after %d calls, want nil after 3", err, n)
	}
	n = 0
	err = b.Retry(context.Background(), func(err error) bool { return err == transient }, func(context.Context) error {
		n++
		return permanent
	})
	if !errors.Is(err, permanent) || n != 1 {
		t.Errorf("Retry(permanent) = %v after %d calls, want permanent after 1", err, n)
	}
	b.Budget = 30 * time.Millisecond
	start := time.Now()
	err = b.Retry(context.Background(), func(error) bool { return true }, func(context.Context) error { return transient })
	if !errors.Is(err, transient) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Retry past budget = %v, want transient and DeadlineExceeded", err)
	}
	if el := time.Since(start); el > time.Second {
		t.Errorf("Retry past a 30ms budget took %v", el)
	}
}
