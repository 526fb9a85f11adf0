package rediseval

import (
	"context"
	"errors"
	"fmt"
	"testing"

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
