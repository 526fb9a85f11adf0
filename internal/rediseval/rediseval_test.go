package rediseval

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/baton-go/baton"
)

// TestClassify: a refusal's text wins, even among other nodes' errors
// already marked unavailable; a bad option and a marked refusal stay as
// they are; anything else is unavailable.
func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		err        error
		auth, unav bool
	}{
		{errors.New("WRONGPASS invalid username-password pair"), true, false},
		{errors.New("NOPERM this user has no permissions to access one of the keys"), true, false},
		{errors.New("tls: failed to verify certificate: x509: certificate signed by unknown authority"), true, false},
		{fmt.Errorf("%w: 1 of 3 nodes answered: %w", baton.ErrUnavailable, errors.Join(errors.New("dial tcp: refused"), errors.New("NOAUTH Authentication required."))), true, true},
		{errors.New("dial tcp 127.0.0.1:1: connect: connection refused"), false, true},
		{context.DeadlineExceeded, false, true},
		{fmt.Errorf("%w: no", baton.ErrUnavailable), false, true},
	} {
		got := Classify(tc.err)
		if errors.Is(got, baton.ErrAuth) != tc.auth || errors.Is(got, baton.ErrUnavailable) != tc.unav || !errors.Is(got, tc.err) {
			t.Errorf("Classify(%v) = %v, want ErrAuth %v, ErrUnavailable %v, wrapping the error", tc.err, got, tc.auth, tc.unav)
		}
	}
	bad := fmt.Errorf("%w: WRONGPASS in a URL", baton.ErrInvalidOption)
	if got := Classify(bad); got != bad {
		t.Errorf("Classify(%v) = %v, want it unchanged", bad, got)
	}
	if Classify(nil) != nil {
		t.Error("Classify(nil) != nil")
	}
}

// TestRetry: Retry returns at the first success, at once on a refusal or
// a bad option, and at ctx's end with the last error otherwise.
func TestRetry(t *testing.T) {
	n := 0
	err := Retry(context.Background(), func() error {
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
		if err := Retry(context.Background(), func() error { n++; return final }); !errors.Is(err, final) || n != 1 {
			t.Errorf("Retry = %v after %d tries, want %v after 1", err, n, final)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	if err := Retry(ctx, func() error { return baton.ErrUnavailable }); !errors.Is(err, baton.ErrUnavailable) || time.Since(start) > time.Second {
		t.Errorf("Retry = %v after %v, want the last error at ctx's end", err, time.Since(start))
	}
}
