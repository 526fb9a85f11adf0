package redlock

import (
	"errors"
	"strings"
	"testing"
)

// A write-back whose nodes never answered has no node errors; its message
// once read "%!w(<nil>)" (seen in TestEarlyStop under load).
func TestWriteBackErr(t *testing.T) {
	for _, tc := range []struct {
		name string
		errs []error
		want string
	}{
		{"no answers", nil, "write-back: 1 of 3 granting nodes will mint above the token (its minter included), want 2 (the others did not answer in time)"},
		{"node errors", []error{errors.New("node 2: i/o timeout")}, "write-back: 1 of 3 granting nodes will mint above the token (its minter included), want 2: node 2: i/o timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := writeBackErr(1, 3, 2, tc.errs)
			if got := err.Error(); got != tc.want || strings.Contains(got, "%!") {
				t.Errorf("writeBackErr(1, 3, 2, %v) = %q, want %q", tc.errs, got, tc.want)
			}
			for _, e := range tc.errs {
				if !errors.Is(err, e) {
					t.Errorf("writeBackErr does not wrap %v", e)
				}
			}
		})
	}
}
