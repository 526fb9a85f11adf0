package engine_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/engine"
)

// TestRetry: Retry returns at the first success, at once on a refusal or
// a bad option, and at ctx's end with the last error otherwise.
func TestRetry(t *testing.T) {
	n := 0
	err := engine.Retry(context.Background(), func() error {
		if n++; n < 3 {
			return baton.ErrUnavailable
		}
		return nil
	})
	if err != nil || n != 3 {
		t.Errorf("Retry = %v after %d tries, want nil after 3", err, n)
	}
	for _, final := range []error{baton.ErrAuth, baton.ErrInvalidOption} {
		n = 0
		if err := engine.Retry(context.Background(), func() error { n++; return final }); !errors.Is(err, final) || n != 1 {
			t.Errorf("Retry = %v after %d tries, want %v after 1", err, n, final)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	if err := engine.Retry(ctx, func() error { return baton.ErrUnavailable }); !errors.Is(err, baton.ErrUnavailable) || time.Since(start) > time.Second {
		t.Errorf("Retry = %v after %v, want the last error at ctx's end", err, time.Since(start))
	}
}
