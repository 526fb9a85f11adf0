package engine

import (
	"context"
	"errors"
	"time"

	"github.com/baton-go/baton"
)

// Retry runs f until it succeeds, fails with an error retrying cannot
// fix (baton.ErrAuth, baton.ErrInvalidOption), or ctx ends, and returns
// f's last error: an engine's connect check, which must wait out a server
// that is starting but give up at once on a refusal. f marks its errors
// (ErrAuth, ErrUnavailable) itself. The pauses between tries double from
// 50ms up to 1s.
func Retry(ctx context.Context, f func() error) error {
	delay := 50 * time.Millisecond
	for {
		err := f()
		if err == nil || errors.Is(err, baton.ErrAuth) || errors.Is(err, baton.ErrInvalidOption) || ctx.Err() != nil {
			return err
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		delay = min(2*delay, time.Second)
	}
}
