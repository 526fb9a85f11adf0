package engine_test

import (
	"errors"
	"math"
	"testing"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/engine"
)

func TestFloorToken(t *testing.T) {
	tests := []struct {
		name       string
		raw, floor uint64
		want       uint64
		wantErr    bool
	}{
		{"no floor", 42, 0, 42, false},
		{"floor added", 42, 1000, 1042, false},
		{"sum at the maximum", math.MaxUint64 - 7, 7, math.MaxUint64, false},
		{"sum one past the maximum", math.MaxUint64 - 6, 7, 0, true},
		{"floor near 2^64", 42, math.MaxUint64 - 10, 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := engine.FloorToken(tc.raw, tc.floor)
			if tc.wantErr {
				if !errors.Is(err, baton.ErrInvalidOption) {
					t.Fatalf("FloorToken(%d, %d) = %d, %v; want an error wrapping %v", tc.raw, tc.floor, got, err, baton.ErrInvalidOption)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("FloorToken(%d, %d) = %d, %v; want %d", tc.raw, tc.floor, got, err, tc.want)
			}
		})
	}
}
